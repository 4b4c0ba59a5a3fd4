import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { EngramClients } from '../clients.js';
import { createMcpServer, type McpServerOptions } from './server.js';

/** Options of {@link runMcpStdio}: the server's, and the streams (default the process's). */
export interface McpStdioOptions extends Omit<McpServerOptions, 'allowFilePaths'> {
  readonly stdin?: Readable;
  readonly stdout?: Writable;
}

/**
 * Serves MCP over stdio (newline-delimited JSON-RPC on `stdin`/`stdout`) until the client closes
 * `stdin`. Only protocol goes to `stdout`: logs must go elsewhere (the logger's destination).
 * File paths are accepted by `ingest_document`: the process runs as the user, on their machine.
 */
export async function runMcpStdio(clients: EngramClients, options: McpStdioOptions): Promise<void> {
  const { stdin = process.stdin, stdout = process.stdout, ...serverOptions } = options;
  const server = createMcpServer(clients, { ...serverOptions, allowFilePaths: true });
  const transport = new StdioServerTransport(stdin, stdout);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  const end = () => void transport.close();
  stdin.once('end', end);
  stdin.once('close', end);
  await server.connect(transport);
  options.logger?.info('mcp server on stdio');
  await closed;
  stdin.off('end', end);
  stdin.off('close', end);
  await server.close();
}
