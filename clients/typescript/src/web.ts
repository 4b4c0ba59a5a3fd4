import { Code, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-web';
import { EngramError } from './errors.js';

/** The protocols fetch can carry: Connect, or gRPC-Web. */
export type WebProtocol = 'connect' | 'grpc-web';

/** Where and how a fetch-based client connects. */
export interface WebTransportOptions {
  /** The server's root URL, e.g. `http://127.0.0.1:50051` (one port serves every protocol). */
  readonly baseUrl: string;
  /** `connect` (default) or `grpc-web`. */
  readonly transport?: WebProtocol;
  /** The fetch to use (a polyfill, a test double of the network). Default `globalThis.fetch`. */
  readonly fetch?: typeof globalThis.fetch;
}

/** A Connect or gRPC-Web transport over fetch, in binary protobuf. */
export function webTransport(options: WebTransportOptions): Transport {
  const settings = {
    baseUrl: options.baseUrl,
    useBinaryFormat: true,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
  const protocol: string = options.transport ?? 'connect';
  if (protocol === 'connect') return createConnectTransport(settings);
  if (protocol === 'grpc-web') return createGrpcWebTransport(settings);
  throw new EngramError({
    code: Code.InvalidArgument,
    message: `transport '${protocol}' is not one of 'connect', 'grpc-web' (gRPC over HTTP/2 is in @engram/client/node)`,
  });
}
