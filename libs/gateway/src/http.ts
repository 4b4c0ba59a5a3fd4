import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * An HTTP request the server has already authenticated: `authorization` is the caller's header as
 * presented (the server checked it before handing the request over), to be forwarded on every RPC.
 */
export interface AuthenticatedCaller {
  readonly authorization: string;
  /** The verified subject and tenant, for logs and headers only (identity travels in the token). */
  readonly subject: string;
  readonly tenantId: string;
}

/**
 * A handler of one route prefix (`/v1/`, `/mcp`). It is given HTTP/1.1 requests (and HTTP/2
 * compatibility requests, which implement the same surface); it must answer every request,
 * including its errors, and never throw.
 */
export type GatewayHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  caller: AuthenticatedCaller,
) => Promise<void>;
