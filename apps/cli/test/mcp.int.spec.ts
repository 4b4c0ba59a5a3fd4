import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAllInOneServer, loadConfig } from '@engram/all-in-one';
import { mintToken, type EngramServer } from '@engram/runtime';
import { fakeOpenAiKey } from '@engram/testing';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const dataDir = mkdtempSync(join(tmpdir(), 'engram-mcp-'));
const secret = `mcp-stdio-test-${process.pid}-0123456789abcdef0123456789abcdef`;
let addr = '';
let server: EngramServer | undefined;

const token = (subject: string) =>
  mintToken({ subject, tenantId: 'local' }, { algorithm: 'HS256', secret: new TextEncoder().encode(secret) });

/** `engram mcp` as the child process of the SDK's stdio client, calling as `subject` (ENGRAM_TOKEN). */
async function mcpAs(subject: string, command: 'source' | 'bin' = 'source') {
  const args =
    command === 'source'
      ? ['--conditions=@engram/source', '--import', 'tsx', 'apps/cli/src/main.ts', 'mcp']
      : [join(repoRoot, 'node_modules/.bin/engram'), 'mcp'];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ENGRAM_ADDR: addr, ENGRAM_TOKEN: await token(subject) },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const protocolErrors: Error[] = [];
  const client = new Client({ name: 'engram-mcp-stdio-test', version: '0.0.0' });
  client.onerror = (error) => protocolErrors.push(error);
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    return { isError: result.isError === true, text, structured: result.structuredContent ?? {} };
  };
  return { client, call, protocolErrors, stderr: () => stderr };
}

beforeAll(async () => {
  // A known secret, so the test mints each user's ENGRAM_TOKEN itself (as an identity provider would).
  const config = loadConfig({
    ENGRAM_PORT: '0',
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_JWT_SECRET: secret,
    ENGRAM_SERVICE_JWT_SECRET: `${secret}:service`,
    ENGRAM_LOG_LEVEL: 'silent',
  });
  ({ server } = await createAllInOneServer(config, { handleSignals: false }));
  addr = server.url;
}, 60_000);

afterAll(() => server?.shutdown());

describe('engram mcp (stdio)', () => {
  it('serves the tools as the ENGRAM_TOKEN user, reading local files, with only protocol on stdout', async () => {
    const mcp = await mcpAs('stdio-alice');
    try {
      const { tools } = await mcp.client.listTools();
      expect(tools).toHaveLength(10);
      const ingest = tools.find((t) => t.name === 'ingest_document');
      expect(ingest?.description).toContain('path of a local file');

      const dir = mkdtempSync(join(tmpdir(), 'engram-mcp-docs-'));
      const file = join(dir, 'herons.md');
      writeFileSync(file, '# Herons\n\nThe grey heron fishes in the mill pond every morning.\n');
      const ingested = await mcp.call('ingest_document', { path: file });
      expect(ingested.isError).toBe(false);
      expect(ingested.structured['document']).toMatchObject({
        displayName: 'herons.md',
        mimeType: 'text/markdown',
        owner: 'stdio-alice',
      });
      const missing = await mcp.call('ingest_document', { path: join(dir, 'nope.md') });
      expect(missing.structured).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'FIELD_INVALID' });

      const found = await mcp.call('search_memory', { query: 'grey heron mill pond', kinds: ['chunk'] });
      expect(found.text).toContain('mill pond');

      const remembered = await mcp.call('remember', { text: 'From now on please answer more concisely.' });
      const job = remembered.structured['extractionJob'] as { decisions: { outcome: string }[] };
      expect(job.decisions.map((d) => d.outcome)).toContain('DECISION_OUTCOME_ACCEPTED');
      const listed = await mcp.call('list_memories', {});
      expect((listed.structured['memories'] as unknown[]).length).toBeGreaterThan(0);

      const bad = await mcp.call('search_memory', { query: '' });
      expect(bad.isError).toBe(true);
      expect(bad.text).toMatch(/Input validation error/);
      expect(mcp.protocolErrors).toEqual([]);
    } finally {
      await mcp.client.close();
    }
  });

  it("redacts secrets, denies another user's memory, and forgets only when confirmed", async () => {
    const owner = await mcpAs('stdio-bob', 'bin');
    const other = await mcpAs('stdio-carol');
    try {
      const key = fakeOpenAiKey(30);
      const added = await owner.call('add_messages', {
        create_session: true,
        messages: [{ role: 'user', content: `my key is ${key}, keep it safe` }],
      });
      expect((added.structured['messages'] as { content: string }[])[0]?.content).toContain('[redacted:');
      expect(JSON.stringify(added)).not.toContain(key);
      const context = await owner.call('build_context', {
        session: String(added.structured['session']),
        message: 'what did I say?',
      });
      expect(context.isError).toBe(false);
      expect(JSON.stringify(context)).not.toContain(key);

      const remembered = await owner.call('remember', { text: 'From now on please answer in French.' });
      const job = remembered.structured['extractionJob'] as { decisions: { memory?: { name: string } }[] };
      const name = job.decisions.find((d) => (d.memory?.name ?? '') !== '')?.memory?.name ?? '';
      expect(name).toMatch(/^memories\//);
      const denied = await other.call('delete_memory', { name });
      expect(denied.isError).toBe(true);
      expect(denied.structured).toMatchObject({ code: 'NOT_FOUND', reason: 'RESOURCE_NOT_FOUND' });

      const refused = await owner.call('forget_user', {});
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain('confirm: "forget me"');
      expect((await owner.call('get_memory', { name })).isError).toBe(false);
      const forgotten = await owner.call('forget_user', { confirm: 'forget me' });
      expect(forgotten.structured['forgetReceipt']).toMatchObject({ subject: 'stdio-bob' });
      const gone = await owner.call('get_memory', { name });
      expect(gone.structured).toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      await owner.client.close();
      await other.client.close();
    }
  });

  it('exits 0 when the client closes stdin, having written nothing to stdout', async () => {
    const child = spawn(
      process.execPath,
      ['--conditions=@engram/source', '--import', 'tsx', 'apps/cli/src/main.ts', 'mcp'],
      {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '', ENGRAM_ADDR: addr, ENGRAM_TOKEN: await token('stdio-dave') },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stdin.end();
    const code = await new Promise<number | null>((exited) => child.on('exit', exited));
    expect(code).toBe(0);
    expect(stdout).toBe('');
  });
});
