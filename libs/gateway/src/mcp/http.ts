import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { describeError } from '@engram/errors';
import type { Logger } from '@engram/telemetry';
import { clientsFor, type TransportFor } from '../clients.js';
import type { GatewayHandler } from '../http.js';
import { createMcpServer } from './server.js';

/** Options of {@link mcpHttpHandler}. */
export interface McpHttpOptions {
  /** How this process reaches the services (in-process in the all-in-one). */
  readonly transportFor: TransportFor;
  readonly logger: Logger;
  /** Name and version the server announces. */
  readonly name?: string;
  readonly version?: string;
  /** The largest request body accepted (default 8 MiB). */
  readonly maxBodyBytes?: number;
}

/** The default limit of an MCP request body. */
export const MCP_MAX_BODY_BYTES = 8 * 1024 * 1024;

/** A JSON-RPC error answer with no id (the request was not read), as the SDK's stateless examples send. */
function answerError(res: ServerResponse, status: number, code: number, message: string, headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

type Body = { ok: true; value: unknown } | { ok: false; status: number; code: number; message: string };

/** Reads and parses the JSON body, refusing more than `limit` bytes (without buffering them). */
async function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  const tooLarge: Body = {
    ok: false,
    status: 413,
    code: -32600,
    message: `the request body is larger than ${limit} bytes`,
  };
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) return tooLarge;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return tooLarge;
    chunks.push(chunk);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400, code: -32700, message: 'Parse error: the body is not JSON' };
  }
}

/**
 * The MCP Streamable HTTP endpoint, STATELESS: every POST gets a fresh server and transport
 * (`sessionIdGenerator: undefined`) whose clients call the services with the caller's own
 * credential, so no state outlives a request and any replica can answer it. GET (the optional
 * server-to-client stream) and DELETE (session end) have nothing to serve without sessions: 405.
 */
export function mcpHttpHandler(options: McpHttpOptions): GatewayHandler {
  const { logger } = options;
  const limit = options.maxBodyBytes ?? MCP_MAX_BODY_BYTES;
  return async (req, res, caller) => {
    try {
      if (req.method !== 'POST') {
        answerError(
          res,
          405,
          -32000,
          'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC messages',
          {
            allow: 'POST',
          },
        );
        return;
      }
      const body = await readBody(req, limit);
      if (!body.ok) {
        answerError(res, body.status, body.code, body.message);
        return;
      }
      const server = createMcpServer(clientsFor(options.transportFor, caller.authorization), {
        subject: caller.subject,
        logger,
        ...(options.name === undefined ? {} : { name: options.name }),
        ...(options.version === undefined ? {} : { version: options.version }),
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body.value);
    } catch (error) {
      logger.warn({ err: describeError(error), subject: caller.subject }, 'mcp request failed');
      if (!res.headersSent) answerError(res, 500, -32603, 'Internal error');
      else res.end();
    }
  };
}
