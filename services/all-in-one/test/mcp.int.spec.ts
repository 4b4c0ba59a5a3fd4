import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FORGET_CONFIRMATION, PROFILE_URI, STORED_DATA_NOTICE } from '@engram/gateway';
import { fakeOpenAiKey } from '@engram/testing';
import { newSecret, startServer, tokenFor, type TestServer } from './harness.js';

const secret = newSecret();
let allInOne: TestServer;
let gateway: { url: string };
const clients: Client[] = [];

/** The text of a resource read's first content. */
function resourceText(read: { contents: ({ text: string } | { blob: string })[] }): string {
  const first = read.contents[0];
  return first !== undefined && 'text' in first ? first.text : '';
}

/**
 * The MCP endpoint under test, in ONE place: the all-in-one's own `/mcp` route (authenticated by
 * the server, then the gateway's stateless handler), on the same port as gRPC.
 */
function startGateway(): { url: string } {
  return { url: `${allInOne.server.url}/mcp` };
}

/** An MCP client (the SDK's own) connected as `subject`. */
async function connectAs(subject: string): Promise<Client> {
  const token = await tokenFor(secret, { subject, tenantId: 'acme' });
  const client = new Client({ name: 'engram-mcp-test', version: '0.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  clients.push(client);
  return client;
}

/** Calls a tool and returns its result (text joined), failing the test on a tool error unless `allowError`. */
async function call(client: Client, name: string, args: Record<string, unknown>, allowError = false) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
  if (result.isError === true && !allowError) throw new Error(`${name} failed: ${text}`);
  return {
    isError: result.isError === true,
    text,
    structured: result.structuredContent ?? {},
  };
}

beforeAll(async () => {
  allInOne = await startServer(secret);
  gateway = startGateway();
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close();
  await allInOne.stop();
});

describe('MCP over Streamable HTTP (stateless)', () => {
  it('lists the tools with their argument schemas', async () => {
    const client = await connectAs('lister');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'add_messages',
      'build_context',
      'delete_memory',
      'forget_user',
      'get_memory',
      'ingest_document',
      'list_memories',
      'remember',
      'search_memory',
      'update_memory',
    ]);
    const search = tools.find((t) => t.name === 'search_memory');
    expect(search?.description).toMatch(/search/i);
    expect(search?.inputSchema.required).toEqual(['query']);
    expect(Object.keys(search?.inputSchema.properties ?? {}).sort()).toEqual([
      'explain',
      'kinds',
      'query',
      'top_k',
    ]);
    const forget = tools.find((t) => t.name === 'forget_user');
    expect(forget?.annotations?.destructiveHint).toBe(true);
    expect(Object.keys(forget?.inputSchema.properties ?? {})).toContain('confirm');
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain(PROFILE_URI);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['engram://memories/{id}']);
  });

  it('ingests a text document and finds it, labelled as stored data', async () => {
    const client = await connectAs('reader');
    const ingested = await call(client, 'ingest_document', {
      text: '# Kettles\n\nThe teal kettle boils water in ninety seconds.',
      display_name: 'kettles.md',
      mime_type: 'text/markdown',
    });
    const document = ingested.structured['document'] as { name: string };
    expect(document.name).toMatch(/^documents\//);
    expect(ingested.structured['indexComplete']).toBe(true);
    const found = await call(client, 'search_memory', {
      query: 'teal kettle',
      kinds: ['chunk'],
      top_k: 3,
      explain: true,
    });
    const results = found.structured['results'] as { kind: string; breakdown?: unknown }[];
    expect(results[0]).toMatchObject({ kind: 'ITEM_KIND_CHUNK' });
    expect(results[0]?.breakdown).toBeDefined();
    expect(found.text).toContain(STORED_DATA_NOTICE);
    expect(found.text).toContain('ninety seconds');
  });

  it('refuses a file path over HTTP: only the local stdio server reads files', async () => {
    const client = await connectAs('reader');
    const refused = await call(client, 'ingest_document', { path: '/etc/hostname' }, true);
    expect(refused.isError).toBe(true);
    expect(refused.structured).toMatchObject({
      code: 'INVALID_ARGUMENT',
      reason: 'FIELD_INVALID',
      metadata: { field: 'path' },
    });
  });

  it('remembers a statement, then lists, reads, updates and deletes the memory', async () => {
    const client = await connectAs('rememberer');
    const remembered = await call(client, 'remember', { text: 'From now on please answer more concisely.' });
    const job = remembered.structured['extractionJob'] as {
      decisions: { outcome: string; memory?: { name: string } }[];
    };
    const accepted = job.decisions.find((d) => d.outcome === 'DECISION_OUTCOME_ACCEPTED');
    const name = accepted?.memory?.name ?? '';
    expect(name).toMatch(/^memories\//);
    expect(remembered.text).toContain('ACCEPTED');

    const listed = await call(client, 'list_memories', { types: ['fact'] });
    expect((listed.structured['memories'] as { name: string }[]).map((m) => m.name)).toContain(name);
    expect(listed.text).toContain(STORED_DATA_NOTICE);

    const shown = await call(client, 'get_memory', { name });
    const memory = shown.structured['memory'] as { etag: string; evergreen?: boolean };
    // A stated answer-style preference is evergreen: it is the user's profile.
    expect(memory.evergreen).toBe(true);
    expect((shown.structured['revisions'] as { action: string }[]).map((r) => r.action)).toEqual([
      'REVISION_ACTION_CREATE',
    ]);

    const updated = await call(client, 'update_memory', { name, confidence: 0.8, etag: memory.etag });
    expect(updated.structured['memory']).toMatchObject({ name, confidence: 0.8 });
    expect(updated.text).toContain(name);
    const stale = await call(client, 'update_memory', { name, confidence: 0.9, etag: memory.etag }, true);
    expect(stale.structured).toMatchObject({ code: 'ABORTED', reason: 'ETAG_MISMATCH' });
    const profile = await client.readResource({ uri: PROFILE_URI });
    const body = JSON.parse(resourceText(profile)) as {
      notice: string;
      memories: { name: string }[];
    };
    expect(body.notice).toBe(STORED_DATA_NOTICE);
    expect(body.memories.map((m) => m.name)).toContain(name);
    const byName = await client.readResource({ uri: `engram://${name}` });
    expect((JSON.parse(resourceText(byName)) as { memory: { name: string } }).memory.name).toBe(name);

    const deleted = await call(client, 'delete_memory', { name, reason: 'test' });
    expect(deleted.structured['memory']).toMatchObject({ status: 'MEMORY_STATUS_DELETED' });
    const history = await call(client, 'get_memory', { name: name.replace('memories/', '') });
    expect((history.structured['revisions'] as { action: string }[]).map((r) => r.action)).toEqual([
      'REVISION_ACTION_CREATE',
      'REVISION_ACTION_UPDATE',
      'REVISION_ACTION_DELETE',
    ]);
  });

  it("answers another user's memory with the service's error reason", async () => {
    const owner = await connectAs('owner-1');
    const remembered = await call(owner, 'remember', { text: 'From now on please answer in French.' });
    const job = remembered.structured['extractionJob'] as { decisions: { memory?: { name: string } }[] };
    const name =
      job.decisions.find((d) => d.memory?.name !== undefined && d.memory.name !== '')?.memory?.name ?? '';
    expect(name).toMatch(/^memories\//);
    const other = await connectAs('intruder-1');
    for (const [tool, args] of [
      ['get_memory', { name }],
      ['delete_memory', { name }],
      ['update_memory', { name, text: 'answer in German' }],
    ] as const) {
      const denied = await call(other, tool, args, true);
      expect(denied.isError).toBe(true);
      expect(denied.structured).toMatchObject({ code: 'NOT_FOUND', reason: 'RESOURCE_NOT_FOUND' });
      expect(denied.text).toContain('NOT_FOUND RESOURCE_NOT_FOUND');
    }
    await expect(other.readResource({ uri: `engram://${name}` })).rejects.toThrow(/RESOURCE_NOT_FOUND/);
  });

  it('answers bad arguments with the SDK schema error, not a crash', async () => {
    const client = await connectAs('careless');
    const wrongType = await call(client, 'search_memory', { query: 42 }, true);
    expect(wrongType.isError).toBe(true);
    expect(wrongType.text).toMatch(/Input validation error/);
    const missing = await call(client, 'build_context', { message: 'hi' }, true);
    expect(missing.text).toMatch(/Input validation error.*session/s);
    const nothing = await call(client, 'update_memory', { name: 'memories/x' }, true);
    expect(nothing.structured).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'FIELD_REQUIRED' });
    const budget = await call(client, 'add_messages', { messages: [{ role: 'user', content: 'x' }] }, true);
    expect(budget.structured).toMatchObject({ reason: 'FIELD_REQUIRED', metadata: { field: 'session' } });
    // The server is still fine.
    expect((await client.listTools()).tools.length).toBe(10);
  });

  it('adds messages to a new session with secrets redacted, and builds its context', async () => {
    const client = await connectAs('talker');
    const key = fakeOpenAiKey(20);
    const added = await call(client, 'add_messages', {
      create_session: true,
      display_name: 'kettle chat',
      messages: [
        { role: 'user', content: `Where is the teal kettle? my key is ${key}` },
        { role: 'assistant', content: 'In the kitchen, by the window.' },
      ],
    });
    expect(added.structured['created']).toBe(true);
    const session = String(added.structured['session']);
    expect(session).toMatch(/^sessions\//);
    const messages = added.structured['messages'] as { content: string }[];
    expect(messages[0]?.content).toContain('[redacted:');
    expect(JSON.stringify(added)).not.toContain(key);

    const more = await call(client, 'add_messages', {
      session,
      messages: [{ role: 'user', content: 'Thanks!' }],
    });
    expect(more.structured['created']).toBe(false);

    const context = await call(client, 'build_context', {
      session,
      message: 'and what does it do?',
      budget: 2000,
    });
    const assembled = context.structured['messages'] as { content: string }[];
    expect(assembled.at(-1)?.content).toBe('and what does it do?');
    const trace = context.structured['trace'] as { layer: string }[];
    expect(trace.map((t) => t.layer)).toContain('RECENT_TURNS');
    expect(JSON.stringify(context)).not.toContain(key);
  });

  it('redacts a secret in remember before anything is stored or returned', async () => {
    const client = await connectAs('leaky');
    const key = fakeOpenAiKey(21);
    const remembered = await call(client, 'remember', { text: `Remember that my OpenAI key is ${key}` });
    expect(remembered.structured['redacted']).toBe(true);
    expect(remembered.text).toContain('redacted');
    expect(JSON.stringify(remembered)).not.toContain(key);
  });

  it('forgets the user only with the exact confirmation', async () => {
    const client = await connectAs('forgettable');
    await call(client, 'add_messages', {
      create_session: true,
      messages: [{ role: 'user', content: 'I keep bees on the roof.' }],
    });
    const refused = await call(client, 'forget_user', { confirm: 'yes' }, true);
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain(`confirm: "${FORGET_CONFIRMATION}"`);
    expect(refused.structured).toMatchObject({
      reason: 'FIELD_REQUIRED',
      metadata: { field: 'confirm', subject: 'forgettable' },
    });
    const unconfirmed = await call(client, 'forget_user', {}, true);
    expect(unconfirmed.isError).toBe(true);

    const done = await call(client, 'forget_user', { confirm: FORGET_CONFIRMATION, reason: 'test' });
    const receipt = done.structured['forgetReceipt'] as {
      subject: string;
      state: string;
      counts: { sessions?: string | number };
    };
    expect(receipt.subject).toBe('forgettable');
    expect(['FORGET_RECEIPT_STATE_PENDING', 'FORGET_RECEIPT_STATE_COMPLETED']).toContain(receipt.state);
    expect(Number(receipt.counts.sessions)).toBe(1);
  });

  it('answers without a bearer 401, GET and DELETE 405, and a non-JSON body a parse error', async () => {
    const anonymous = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(anonymous.status).toBe(401);
    const authorization = `Bearer ${await tokenFor(secret, { subject: 'raw', tenantId: 'acme' })}`;
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(gateway.url, {
        method,
        headers: { accept: 'text/event-stream', authorization },
      });
      expect(response.status).toBe(405);
      expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    }
    const malformed = await fetch(gateway.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization,
      },
      body: '{not json',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: -32700 } });
  });
});
