/**
 * @engram/gateway: protocol adapters over the Engram RPCs, with no business logic of their own.
 * Every operation is a call of an existing RPC as the caller (their bearer credential forwarded
 * as is), so authentication, authorization, validation, redaction and limits are the services'.
 */
export {
  clientsFor,
  clientsOver,
  withAuthorization,
  type EngramClients,
  type TransportFor,
} from './clients.js';
export type { AuthenticatedCaller, GatewayHandler } from './http.js';
export * from './mcp/index.js';
export * from './openai/index.js';
export * from './studio/index.js';
