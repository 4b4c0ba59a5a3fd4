import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Client, type Transport } from '@connectrpc/connect';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';

/** Clients of the four services, all calling as one caller. */
export interface EngramClients {
  readonly governance: Client<typeof GovernanceService>;
  readonly ingestion: Client<typeof IngestionService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly context: Client<typeof ContextService>;
}

/** How a process reaches a service: in-process in the all-in-one, over the network otherwise. */
export type TransportFor = (service: DescService) => Transport;

/**
 * A transport that sends `authorization` (`Bearer …`, exactly as the caller presented it) on
 * every call. The adapters never verify or mint identities themselves: each RPC authenticates the
 * credential at the service boundary, like any other client's call.
 */
export function withAuthorization(transport: Transport, authorization: string): Transport {
  // connect types the header as the DOM's HeadersInit, which Node's types do not declare.
  const headed = (header: unknown): Headers => {
    const headers = new Headers(header as Headers | Record<string, string> | undefined);
    headers.set('authorization', authorization);
    return headers;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, timeoutMs, headed(header), input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, timeoutMs, headed(header), input, contextValues),
  };
}

/** Clients of the four services over `transportFor`, calling with `authorization`. */
export function clientsFor(transportFor: TransportFor, authorization: string): EngramClients {
  const client = <S extends DescService>(service: S): Client<S> =>
    createClient(service, withAuthorization(transportFor(service), authorization));
  return {
    governance: client(GovernanceService),
    ingestion: client(IngestionService),
    retrieval: client(RetrievalService),
    context: client(ContextService),
  };
}

/** Clients over one transport that already carries the caller's credential (the CLI's). */
export function clientsOver(transport: Transport): EngramClients {
  return {
    governance: createClient(GovernanceService, transport),
    ingestion: createClient(IngestionService, transport),
    retrieval: createClient(RetrievalService, transport),
    context: createClient(ContextService, transport),
  };
}
