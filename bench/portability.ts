/**
 * Export and import benchmark (issue 22): how long a user's whole memory takes to leave and to come
 * back, on the all-in-one in this process (SQLite and the embedded index, or MariaDB with
 * --mysql-url).
 *
 *   npm run bench:portability -- [--sessions 20] [--messages 100] [--memories 500] [--doc-kib 2048]
 *     [--mysql-url mysql://…] [--out bench/out/portability.json]
 *
 * Seeds one user with --sessions sessions of --messages messages each (AppendMessages, 50 per
 * call), --memories FACTs (CreateMemory) and one generated Markdown document of --doc-kib KiB
 * (IngestDocument), waits for the indexer, then times: ExportUser (lines, bytes); ImportUser of
 * that export into a second tenant with validate_only, then for real (new identifiers); the same
 * import again (nothing written); and the indexer's catch-up on what the import enqueued. Prints
 * the numbers and writes JSON.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createClient, type CallOptions } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createAllInOneServer, loadConfig } from '@engram/all-in-one';
import { GovernanceService, MemoryType, type ImportUserResponse } from '@engram/contracts/governance';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { mintToken, type Role } from '@engram/runtime';
import { gitCommit, machine } from './lib/machine.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '20' },
    messages: { type: 'string', default: '100' },
    memories: { type: 'string', default: '500' },
    'doc-kib': { type: 'string', default: '2048' },
    'mysql-url': { type: 'string' },
    out: { type: 'string', default: 'bench/out/portability.json' },
  },
});
const sessions = Number(values.sessions);
const messagesPerSession = Number(values.messages);
const memoryCount = Number(values.memories);
const docKib = Number(values['doc-kib']);

const secret = randomBytes(32).toString('hex');
const dataDir = mkdtempSync(join(tmpdir(), 'engram-portability-'));
const { server } = await createAllInOneServer(
  loadConfig({
    ENGRAM_PORT: '0',
    ENGRAM_JWT_SECRET: secret,
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_LOG_LEVEL: 'warn',
    ...(values['mysql-url'] === undefined ? {} : { MYSQL_URL: values['mysql-url'] }),
  }),
  { handleSignals: false },
);
const transport = createGrpcTransport({ baseUrl: server.url });
const governance = createClient(GovernanceService, transport);
const ingestion = createClient(IngestionService, transport);
const retrieval = createClient(RetrievalService, transport);

async function as(tenant: string, subject: string, roles: Role[] = []): Promise<CallOptions> {
  const token = await mintToken(
    { subject, tenantId: tenant, roles },
    { algorithm: 'HS256', secret: new TextEncoder().encode(secret) },
  );
  return { headers: { authorization: `Bearer ${token}` }, timeoutMs: 300_000 };
}

/**
 * Waits until the tenant's outbox is applied and every kind's points match its rows (`drift` 0:
 * lexically searchable), then until no point lacks its dense vector; the two times, ms.
 */
async function indexed(tenant: string): Promise<{ lexicalMs: number; denseMs: number }> {
  const started = performance.now();
  const admin = await as(tenant, 'root', ['admin']);
  let lexicalMs: number | undefined;
  for (;;) {
    const { indexStatus } = await retrieval.getIndexStatus({}, admin);
    const kinds = indexStatus?.kinds ?? [];
    const caughtUp = indexStatus?.outboxPending === 0n && kinds.every((k) => k.drift === 0n);
    if (caughtUp) lexicalMs ??= performance.now() - started;
    if (caughtUp && kinds.every((k) => (k.densePendingPoints ?? 0n) === 0n)) {
      return { lexicalMs: lexicalMs ?? 0, denseMs: performance.now() - started };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function paragraph(i: number): string {
  return `Paragraph ${i}: the field team logged reef survey ${i} with water at ${(i % 9) + 18} degrees and ${i % 40} turtles sighted near marker ${i * 7}.`;
}

try {
  const alice = await as('source', 'alice');
  const seedStart = performance.now();
  for (let s = 0; s < sessions; s++) {
    const { session } = await ingestion.createSession({ session: { displayName: `chat ${s}` } }, alice);
    for (let m = 0; m < messagesPerSession; m += 50) {
      const count = Math.min(50, messagesPerSession - m);
      await ingestion.appendMessages(
        {
          parent: session!.name,
          messages: Array.from({ length: count }, (_, k) => ({
            role: (m + k) % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
            content: `Session ${s} turn ${m + k}: ${paragraph(s * 1000 + m + k)} zq${s}x${m + k}marker`,
          })),
        },
        alice,
      );
    }
  }
  for (let i = 0; i < memoryCount; i++) {
    await governance.createMemory(
      {
        memory: {
          type: MemoryType.FACT,
          namespace: 'bench',
          key: `fact_${i}`,
          value: { index: i },
          text: `Fact ${i}: the user prefers seat ${i % 60} on flight ${i}.`,
        },
      },
      alice,
    );
  }
  const doc = Array.from({ length: Math.ceil((docKib * 1024) / 140) }, (_, i) =>
    i % 25 === 0 ? `## Section ${i / 25}\n\n${paragraph(i)}` : paragraph(i),
  ).join('\n\n');
  await ingestion.ingestDocument(
    {
      document: { mimeType: 'text/markdown', displayName: 'survey' },
      content: new TextEncoder().encode(doc),
    },
    alice,
  );
  await indexed('source');
  const seedMs = performance.now() - seedStart;

  const exportStart = performance.now();
  const lines: string[] = [];
  for await (const response of governance.exportUser({}, alice)) lines.push(...response.lines);
  const exportMs = performance.now() - exportStart;
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);

  const bob = await as('target', 'bob');
  const importOf = async (validateOnly: boolean) => {
    const started = performance.now();
    async function* messages() {
      yield { validateOnly, lines: lines.slice(0, 200) };
      for (let i = 200; i < lines.length; i += 200) yield { lines: lines.slice(i, i + 200) };
    }
    const response: ImportUserResponse = await governance.importUser(messages(), bob);
    return { ms: performance.now() - started, response };
  };
  const checked = await importOf(true);
  const imported = await importOf(false);
  // The newest round of the import, found by its own word (lexical only): when it is searchable.
  const lastMarker = `zq${sessions - 1}x${messagesPerSession - 2}marker`;
  const probeStart = performance.now();
  let lastFoundMs: number | undefined;
  while (lastFoundMs === undefined && performance.now() - probeStart < 120_000) {
    const { results } = await retrieval.search(
      { query: lastMarker, topK: 3, options: { vectorWeight: 0, textWeight: 1 } },
      bob,
    );
    if (results.length > 0) lastFoundMs = performance.now() - probeStart;
    else await new Promise((r) => setTimeout(r, 20));
  }
  const catchUp = await indexed('target');
  const again = await importOf(false);
  const created = (r: ImportUserResponse) => Object.values(r.created).reduce((n, c) => n + Number(c), 0);

  const report = {
    machine: machine(),
    commit: gitCommit(),
    store: values['mysql-url'] === undefined ? 'sqlite' : 'mariadb',
    seeded: { sessions, messages: sessions * messagesPerSession, memories: memoryCount, docKib, seedMs },
    export: { ms: exportMs, lines: lines.length, bytes, linesPerSecond: lines.length / (exportMs / 1000) },
    validateOnly: { ms: checked.ms, wouldCreate: created(checked.response) },
    import: {
      ms: imported.ms,
      created: created(imported.response),
      recordsPerSecond: Number(imported.response.records) / (imported.ms / 1000),
      idsRemapped: imported.response.idsRemapped,
    },
    indexCatchUp: catchUp,
    lastRoundFoundMs: lastFoundMs ?? null,
    reimport: { ms: again.ms, created: created(again.response) },
  };
  console.log(
    `seeded in ${(seedMs / 1000).toFixed(1)} s: ${sessions * messagesPerSession} messages, ${memoryCount} memories, a ${docKib} KiB document`,
  );
  console.log(
    `export:        ${lines.length} lines, ${(bytes / 1024 / 1024).toFixed(2)} MiB in ${exportMs.toFixed(0)} ms (${report.export.linesPerSecond.toFixed(0)} lines/s)`,
  );
  console.log(`validate only: ${checked.ms.toFixed(0)} ms (would create ${report.validateOnly.wouldCreate})`);
  console.log(
    `import:        ${report.import.created} records in ${imported.ms.toFixed(0)} ms (${report.import.recordsPerSecond.toFixed(0)} records/s), new ids: ${String(report.import.idsRemapped)}`,
  );
  console.log(
    `index after the import: lexically searchable (drift 0) in ${catchUp.lexicalMs.toFixed(0)} ms, dense vectors for all in ${catchUp.denseMs.toFixed(0)} ms`,
  );
  console.log(
    `the import's last round found lexically after ${lastFoundMs?.toFixed(0) ?? 'more than 120000'} ms`,
  );
  console.log(`re-import:     ${again.ms.toFixed(0)} ms, created ${report.reimport.created}`);
  const out = resolve(values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`wrote ${out}`);
} finally {
  await server.shutdown();
}
