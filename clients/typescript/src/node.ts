/**
 * `@engram/client/node`: the SDK for Node with gRPC over HTTP/2 (the default here), which also
 * streams document ingestion (up to 64 MiB, with progress). Connect and gRPC-Web stay available.
 * Kept out of the main entry so that browser bundles never pull in `node:http2`.
 */
import { createGrpcTransport } from '@connectrpc/connect-node';
import { EngramClient, type EngramClientOptions } from './client.js';
import { webTransport, type WebTransportOptions } from './web.js';

/** The protocols of the Node client: `grpc` (default, HTTP/2), `connect` or `grpc-web` (fetch). */
export type NodeProtocol = 'grpc' | 'connect' | 'grpc-web';

/** Options of the Node {@link Engram}. */
export interface EngramNodeOptions extends EngramClientOptions, Omit<WebTransportOptions, 'transport'> {
  /** Default `grpc`. */
  readonly transport?: NodeProtocol;
}

/** An Engram client for Node: `new Engram({ baseUrl: 'http://127.0.0.1:50051', token })`. */
export class Engram extends EngramClient {
  constructor(options: EngramNodeOptions) {
    const protocol = options.transport ?? 'grpc';
    if (protocol === 'grpc') {
      super(createGrpcTransport({ baseUrl: options.baseUrl }), options, { bidiStreaming: true });
    } else {
      super(webTransport({ ...options, transport: protocol }), options, { bidiStreaming: false });
    }
  }
}

export * from './index.js';
