import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '@engram/telemetry';

/** A running Prometheus endpoint. */
export interface MetricsServer {
  readonly port: number;
  /** `http://host:port/metrics`. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) on its own plain HTTP/1.1 port, apart from the
 * gRPC port: scrapers speak HTTP/1.1, and the API port stays behind authentication. Nothing else
 * is served (404).
 */
export async function startMetricsServer(options: {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly registry: Registry;
  readonly logger: Logger;
}): Promise<MetricsServer> {
  const { registry, logger } = options;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? '' : text);
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'metrics collection failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  // Scrapes are short; idle keep-alive sockets must not hold shutdown up.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    port,
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}/metrics`,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      })),
  };
}
