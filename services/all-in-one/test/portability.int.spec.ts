import { randomBytes } from 'node:crypto';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, type CallOptions, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  ForgetReceiptState,
  type GovernanceService,
  type ImportUserResponse,
  MemoryType,
} from '@engram/contracts/governance';
import { type IngestionService, MessageRole } from '@engram/contracts/ingestion';
import type { RetrievalService } from '@engram/contracts/retrieval';
import { convertMem0, ExportWriter, parseExport } from '@engram/portability';
import { callerOf, failure, newSecret, sleep, startServer } from './harness.js';

// ExportUser → ForgetUser → ImportUser through real gRPC on the embedded defaults: the same
// memories, messages and search results come back; an import into a second tenant stays there;
// a bad file is refused whole, at its line.

const secret = newSecret();
const suffix = randomBytes(4).toString('hex');
const alice = `alice-${suffix}`;
const bob = `bob-${suffix}`;
const marker = `narwhal${suffix}`;

let stop: (() => Promise<void>) | undefined;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let retrieval: Client<typeof RetrievalService>;

beforeAll(async () => {
  ({ stop, ingestion, governance, retrieval } = await startServer(secret));
}, 60_000);

afterAll(async () => {
  await stop?.();
});

const acme = callerOf(secret, 'acme');
const globex = callerOf(secret, 'globex');

async function indexed(): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { indexStatus } = await retrieval.getIndexStatus({}, await acme('root', { roles: ['admin'] }));
    const other = await retrieval.getIndexStatus({}, await globex('root', { roles: ['admin'] }));
    if (indexStatus?.outboxPending === 0n && other.indexStatus?.outboxPending === 0n) return;
    await sleep(100);
  }
  throw new Error('the indexer did not catch up within 30 s');
}

async function exportOf(options: CallOptions): Promise<string[]> {
  const lines: string[] = [];
  for await (const response of governance.exportUser({}, options)) lines.push(...response.lines);
  return lines;
}

/** ImportUser with the lines in messages of 7 (so the stream really has several messages). */
function importLines(
  lines: readonly string[],
  options: CallOptions,
  first: { subject?: string; validateOnly?: boolean } = {},
): Promise<ImportUserResponse> {
  async function* messages() {
    yield { ...first, lines: lines.slice(0, 7) };
    for (let i = 7; i < lines.length; i += 7) yield { lines: lines.slice(i, i + 7) };
  }
  return governance.importUser(messages(), options);
}

async function memoriesOf(options: CallOptions) {
  const { memories } = await governance.listMemories({ pageSize: 100 }, options);
  return memories
    .map((m) => ({ name: m.name, text: m.text, type: m.type, status: m.status }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

async function messagesOf(options: CallOptions) {
  const { sessions } = await ingestion.listSessions({ pageSize: 100 }, options);
  const all: { session: string; sequence: bigint; content: string }[] = [];
  for (const s of sessions) {
    const { messages } = await ingestion.listMessages({ parent: s.name, pageSize: 100 }, options);
    all.push(...messages.map((m) => ({ session: s.name, sequence: m.sequence, content: m.content })));
  }
  return all.sort((a, b) => `${a.session}:${a.sequence}`.localeCompare(`${b.session}:${b.sequence}`));
}

async function searchNames(query: string, options: CallOptions): Promise<string[]> {
  const { results } = await retrieval.search({ query, topK: 20 }, options);
  return results.map((r) => r.name).sort();
}

/** The tail of a name (`memories/X` → `X`), for comparing results across tenants. */
const count = (response: ImportUserResponse, kind: string) => Number(response.created[kind] ?? 0n);

describe('ExportUser and ImportUser', () => {
  let exported: string[];
  let memoriesBefore: Awaited<ReturnType<typeof memoriesOf>>;
  let messagesBefore: Awaited<ReturnType<typeof messagesOf>>;
  let searchBefore: string[];

  it('exports everything a user owns as the documented JSON lines, with a checked header and trailer', async () => {
    const options = await acme(alice);
    await ingestion.ingestDocument(
      {
        document: { mimeType: 'text/plain', displayName: 'field notes' },
        content: new TextEncoder().encode(
          `Field notes. The ${marker} migrates north in spring.\n\nIt eats cod.`,
        ),
        waitForIndex: true,
      },
      options,
    );
    const { session } = await ingestion.createSession(
      { session: { timeZone: 'UTC', externalId: `chat-${suffix}` } },
      options,
    );
    const at = Date.now() - 60_000;
    await ingestion.appendMessages(
      {
        parent: session!.name,
        messages: [
          {
            role: MessageRole.USER,
            content: `I saw a ${marker} near Tromsø.`,
            occurTime: timestampFromMs(at),
          },
          { role: MessageRole.ASSISTANT, content: 'What a sight!', occurTime: timestampFromMs(at + 1_000) },
        ],
      },
      options,
    );
    await ingestion.flushSession(
      { name: session!.name, waitForExtraction: true, extractionWaitTimeout: { seconds: 30n } },
      options,
    );
    await governance.createMemory(
      {
        memory: {
          type: MemoryType.FACT,
          namespace: 'profile',
          key: 'favourite_animal',
          value: { animal: marker },
          text: `Alice's favourite animal is the ${marker}`,
        },
      },
      options,
    );
    // Bob's content must never appear in Alice's export.
    await governance.createMemory(
      {
        memory: {
          type: MemoryType.FACT,
          namespace: 'hobby',
          key: 'diary',
          value: { about: marker },
          text: `Bob keeps a ${marker} diary`,
        },
      },
      await acme(bob),
    );
    await indexed();

    exported = await exportOf(options);
    const parsed = parseExport(exported);
    expect(parsed.header).toMatchObject({
      format: 'engram.export',
      version: 1,
      source: { tenant: 'acme', subject: alice },
    });
    expect(parsed.records.session).toHaveLength(1);
    expect(parsed.records.message).toHaveLength(2);
    expect(parsed.records.document).toHaveLength(1);
    expect(parsed.records.chunk.length).toBeGreaterThan(0);
    expect(parsed.records.memory.length).toBeGreaterThanOrEqual(1);
    expect(parsed.records.memory_revision.length).toBeGreaterThanOrEqual(parsed.records.memory.length);
    expect(parsed.records.mem_cell.length).toBeGreaterThanOrEqual(1);
    expect(exported.join('\n')).not.toContain('Bob keeps');
    for (const line of exported) expect(line).not.toMatch(/"tenantId"|"ownerId"/);

    memoriesBefore = await memoriesOf(options);
    messagesBefore = await messagesOf(options);
    searchBefore = await searchNames(marker, options);
    expect(searchBefore.length).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('re-importing into the same account changes nothing', async () => {
    const response = await importLines(exported, await acme(alice));
    expect(response.idsRemapped).toBe(false);
    expect(Object.values(response.created).every((n) => n === 0n)).toBe(true);
    expect(Number(response.unchanged['memory'])).toBe(memoriesBefore.length);
    expect(Number(response.records)).toBe(exported.length - 2);
  });

  it('after ForgetUser, importing the export gives back the same memories, messages and search results', async () => {
    const options = await acme(alice);
    const { forgetReceipt } = await governance.forgetUser({ subject: alice }, options);
    for (let i = 0; i < 600; i++) {
      const { forgetReceipt: r } = await governance.getForgetReceipt({ name: forgetReceipt!.name }, options);
      if (r?.state === ForgetReceiptState.COMPLETED) break;
      await sleep(100);
    }
    await indexed();
    expect(await memoriesOf(options)).toEqual([]);
    expect(await searchNames(marker, options)).toEqual([]);

    const response = await importLines(exported, options);
    expect(response).toMatchObject({
      subject: alice,
      sourceTenant: 'acme',
      sourceSubject: alice,
      idsRemapped: false,
      redactedFields: 0n,
    });
    expect(count(response, 'memory')).toBe(memoriesBefore.length);
    expect(count(response, 'message')).toBe(2);
    await indexed();
    expect(await memoriesOf(options)).toEqual(memoriesBefore);
    expect(await messagesOf(options)).toEqual(messagesBefore);
    expect(await searchNames(marker, options)).toEqual(searchBefore);
    // And the export of the restored account is the same content.
    expect(parseExport(await exportOf(options)).records).toEqual(parseExport(exported).records);
  }, 120_000);

  it('an import into a second tenant gets its own identifiers and never shows in the first', async () => {
    const carol = await globex(`carol-${suffix}`);
    const response = await importLines(exported, carol);
    expect(response.idsRemapped).toBe(true);
    expect(count(response, 'memory')).toBe(memoriesBefore.length);
    await indexed();
    const carolMemories = await memoriesOf(carol);
    expect(carolMemories.map((m) => m.text).sort()).toEqual(memoriesBefore.map((m) => m.text).sort());
    expect(carolMemories.map((m) => m.name)).not.toEqual(expect.arrayContaining([memoriesBefore[0]!.name]));
    const carolSearch = await searchNames(marker, carol);
    expect(carolSearch).toHaveLength(searchBefore.length);
    expect(carolSearch.some((n) => searchBefore.includes(n))).toBe(false);
    // Tenant acme sees exactly what it saw before, for Alice and for its administrator.
    expect(await searchNames(marker, await acme(alice))).toEqual(searchBefore);
    const adminView = await governance.listMemories(
      { pageSize: 100 },
      await acme('root', { roles: ['admin'] }),
    );
    expect(adminView.memories.some((m) => carolMemories.some((c) => c.name === m.name))).toBe(false);
    // A re-run into the second tenant writes nothing.
    const again = await importLines(exported, carol);
    expect(Object.values(again.created).every((n) => n === 0n)).toBe(true);
  }, 120_000);

  it('refuses a damaged or foreign file whole, naming the line, and writes nothing', async () => {
    const dave = await acme(`dave-${suffix}`);
    const edited = exported.map((line, i) =>
      i === 3 ? line.replace(/"sequence":\d+/, '"sequence":99') : line,
    );
    const tampered = await failure(importLines(edited, dave));
    expect(tampered).toMatchObject({ code: Code.InvalidArgument, reason: 'IMPORT_CHECKSUM_MISMATCH' });
    expect(tampered.metadata['field']).toBe('sha256');

    const truncated = await failure(importLines(exported.slice(0, -1), dave));
    expect(truncated).toMatchObject({ code: Code.InvalidArgument, reason: 'IMPORT_FORMAT_UNSUPPORTED' });

    const writer = new ExportWriter();
    const header = writer.header({
      schema: '',
      producer: 'test',
      exportedAt: new Date().toISOString(),
      source: { tenant: 'acme', subject: `dave-${suffix}` },
      counts: { memory: 1 },
    });
    const bad = [
      header,
      writer.record('memory', { ...parseExport(exported).records.memory[0]!, confidence: 7 }),
      writer.trailer(),
    ];
    const invalid = await failure(importLines(bad, dave));
    expect(invalid).toMatchObject({ code: Code.InvalidArgument, reason: 'IMPORT_RECORD_INVALID' });
    expect(invalid.metadata).toMatchObject({ line: '2', kind: 'memory', field: 'record.confidence' });

    const future = [exported[0]!.replace('"version":1', '"version":2'), ...exported.slice(1)];
    expect(await failure(importLines(future, dave))).toMatchObject({ reason: 'IMPORT_FORMAT_UNSUPPORTED' });

    const forOther = await failure(importLines(exported, dave, { subject: alice }));
    expect(forOther).toMatchObject({ code: Code.PermissionDenied, reason: 'ROLE_REQUIRED' });

    // A record that claims Bob's memory's identifier (same tenant, no remapping): a conflict.
    const bobExport = parseExport(await exportOf(await acme(bob)));
    const claim = new ExportWriter();
    const lines = [
      claim.header({
        schema: '',
        producer: 'test',
        exportedAt: new Date().toISOString(),
        source: { tenant: 'acme', subject: `dave-${suffix}` },
        counts: { memory: 1 },
      }),
      claim.record('memory', bobExport.records.memory[0]!),
      claim.trailer(),
    ];
    const conflict = await failure(importLines(lines, dave));
    expect(conflict).toMatchObject({ code: Code.FailedPrecondition, reason: 'IMPORT_CONFLICT' });
    expect(conflict.metadata).toMatchObject({ line: '2', kind: 'memory' });

    expect(await memoriesOf(dave)).toEqual([]);
    expect(await messagesOf(dave)).toEqual([]);
  }, 60_000);

  it('imports a converted mem0 export with its secrets redacted, once, and an administrator may import for a user', async () => {
    const mem0 = [
      {
        id: 'c1b2a3d4-0000-4000-8000-000000000001',
        memory: `Loves watching the ${marker} documentary`,
        user_id: 'erin',
        metadata: { source: 'chat', rating: 5 },
        categories: ['hobbies'],
        created_at: '2024-07-26T10:29:36.630547-07:00',
        updated_at: '2024-07-27T08:00:00-07:00',
      },
      {
        id: 'c1b2a3d4-0000-4000-8000-000000000002',
        memory: 'Deploy key is AKIAIOSFODNN7EXAMPLE with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
        user_id: 'erin',
        created_at: '2024-07-28T09:00:00Z',
      },
    ];
    const lines = convertMem0(mem0, { now: Date.parse('2026-12-01T00:00:00Z') });
    const admin = await acme('root', { roles: ['admin'] });
    const erin = `erin-${suffix}`;
    const checked = await importLines(lines, admin, { subject: erin, validateOnly: true });
    expect(checked).toMatchObject({ validateOnly: true, subject: erin });
    expect(count(checked, 'memory')).toBe(2);
    expect(await memoriesOf(await acme(erin))).toEqual([]);

    const response = await importLines(lines, admin, { subject: erin });
    expect(count(response, 'memory')).toBe(2);
    expect(count(response, 'memory_revision')).toBe(2);
    expect(response.redactedFields).toBeGreaterThanOrEqual(1n);
    const memories = await memoriesOf(await acme(erin));
    expect(memories).toHaveLength(2);
    const joined = memories.map((m) => m.text).join('\n');
    expect(joined).toContain(marker);
    expect(joined).not.toContain('AKIAIOSFODNN7EXAMPLE');
    expect(joined).not.toContain('wJalrXUtnFEMI');
    const again = await importLines(convertMem0(mem0, { now: Date.now() }), admin, { subject: erin });
    expect(Object.values(again.created).every((n) => n === 0n)).toBe(true);
    await indexed();
    expect((await searchNames(`${marker} documentary`, await acme(erin))).length).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
