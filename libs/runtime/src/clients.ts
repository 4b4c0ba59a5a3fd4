import type { DescService } from '@bufbuild/protobuf';
import {
  createClient,
  createRouterTransport,
  type CallOptions,
  type Client,
  type HandlerContext,
  type Transport,
} from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { principalKey } from './auth.js';
import { requestIdKey } from './context-keys.js';
import { HealthRegistry } from './health.js';
import { engramRoutes, serverInterceptors, type RoutingOptions } from './server.js';
import { createClientTracingInterceptor, injectTraceContext, traceContextKey } from './tracing.js';

/**
 * Call options for a service-to-service call made while handling `ctx`: the caller's credential
 * (identity is never re-derived from fields), its request id, its trace context (`traceparent`),
 * its remaining deadline and its cancellation signal.
 */
export function forwardedCallOptions(ctx: HandlerContext): CallOptions {
  const headers = new Headers();
  const principal = ctx.values.get(principalKey);
  if (principal !== undefined) headers.set('authorization', `Bearer ${principal.token}`);
  const requestId = ctx.values.get(requestIdKey);
  if (requestId !== '') headers.set('x-request-id', requestId);
  const traceContext = ctx.values.get(traceContextKey);
  if (traceContext !== undefined) injectTraceContext(headers, traceContext);
  const remaining = ctx.timeoutMs();
  return {
    headers,
    signal: ctx.signal,
    // An expired deadline must still fail fast downstream rather than become "no deadline".
    ...(remaining !== undefined ? { timeoutMs: Math.max(1, remaining) } : {}),
  };
}

/**
 * A gRPC (HTTP/2) transport to another Engram process, e.g. `http://retrieval:50051`. Each call
 * gets a CLIENT span and carries its `traceparent`. It accepts no compressed answers: between
 * Engram's processes (one cluster, one machine) gzip only spends CPU at both ends, which
 * connect-node would otherwise do for every answer over 1 KiB (a Search with its texts is several).
 */
export function createNetworkTransport(baseUrl: string): Transport {
  return createGrpcTransport({
    baseUrl,
    acceptCompression: [],
    interceptors: [createClientTracingInterceptor()],
  });
}

/**
 * A transport that dispatches calls to services mounted in this very process, through the same
 * routes and interceptors as the network server (authentication, limits, error boundary), so the
 * all-in-one process behaves exactly like separate processes. `services` is read lazily, at the
 * first call, so services can be given clients of each other before all of them exist.
 */
export function createInProcessTransport(options: () => RoutingOptions): Transport {
  let transport: Transport | undefined;
  const resolve = () => {
    if (transport === undefined) {
      const routing = options();
      transport = createRouterTransport(engramRoutes(routing.services, new HealthRegistry()), {
        router: { interceptors: serverInterceptors(routing) },
        transport: { interceptors: [createClientTracingInterceptor()] },
      });
    }
    return transport;
  };
  return {
    unary: (...args) => resolve().unary(...args),
    stream: (...args) => resolve().stream(...args),
  };
}

/** A typed client of `service` over `transport`. */
export function serviceClient<S extends DescService>(service: S, transport: Transport): Client<S> {
  return createClient(service, transport);
}
