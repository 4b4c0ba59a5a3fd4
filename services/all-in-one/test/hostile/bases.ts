/**
 * One valid request per RPC, the starting point that hostile mutations change one field of. The
 * table is keyed by `<service>/<method>`; the spec fails when an RPC of the registry has no entry,
 * so a new RPC cannot be silently skipped.
 */
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { ItemKind, Scope } from '@engram/contracts/common';
import { MemoryType, ReviewVerdict } from '@engram/contracts/governance';
import { MessageRole } from '@engram/contracts/ingestion';
import { ReindexMode } from '@engram/contracts/retrieval';
import { ExportWriter } from '@engram/portability';
import type { Caller, Fixtures, Harness } from './server.js';

export interface Base {
  readonly caller: Caller;
  /** The init object of the request (a list of them for client streams). */
  readonly input: unknown;
}

type BaseFn = (fx: Fixtures, h: Harness, n: number) => Base | Promise<Base>;

const G = 'engram.governance.v1.GovernanceService';
const I = 'engram.ingestion.v1.IngestionService';
const R = 'engram.retrieval.v1.RetrievalService';
const C = 'engram.context.v1.ContextService';

const content = (n: number) =>
  new TextEncoder().encode(`Hostile test document ${n}.\n\nIt talks about green tea.`);
const budget = { totalTokens: 4_000 };

/** The lines of a small valid export (one memory and its revision) for `subject`. */
function exportLines(tenant: string, subject: string, n: number): string[] {
  const writer = new ExportWriter();
  const at = Date.UTC(2026, 0, 1) + n;
  const memory = {
    id: `01KA${String(n).padStart(22, '0')}`,
    orgId: '',
    scope: 'SELF' as const,
    type: 'FACT' as const,
    namespace: 'hostile',
    key: `fact_${n}`,
    value: { n },
    text: `Imported fact ${n}: green tea.`,
    evergreen: false,
    sourceKind: 'IMPORT' as const,
    confidence: 0.9,
    status: 'ACTIVE' as const,
    statusReason: '',
    evidence: { messageIds: [], chunkIds: [] },
    languageCode: 'en',
    metadata: {},
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  return [
    writer.header({
      schema: '',
      producer: 'hostile',
      exportedAt: new Date(at).toISOString(),
      source: { tenant, subject },
      counts: { memory: 1, memory_revision: 1 },
    }),
    writer.record('memory', memory),
    writer.record('memory_revision', {
      id: `01KB${String(n).padStart(22, '0')}`,
      memoryId: memory.id,
      version: 1,
      action: 'CREATE',
      actorKind: 'SYSTEM',
      actorId: 'hostile',
      reason: '',
      rule: '',
      requestId: '',
      after: memory,
      changedPaths: [],
      createdAt: at,
    }),
    writer.trailer(),
  ];
}

/** A fresh empty session of alice's (for the RPCs that change or delete one). */
async function newSession(fx: Fixtures, h: Harness) {
  const { session } = await h.ingestion.createSession(
    { session: {} },
    { headers: await h.headers(fx.alice) },
  );
  return session!;
}

export const BASES: Record<string, BaseFn> = {
  [`${G}/CreateMemory`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: {
      memory: { type: MemoryType.EPISODE, text: `alice went to the river, time ${n}`, confidence: 0.9 },
      requestId: `create-${n}`,
    },
  }),
  [`${G}/GetMemory`]: (fx) => ({ caller: fx.alice, input: { name: fx.memFact } }),
  [`${G}/ListMemories`]: (fx) => ({ caller: fx.alice, input: { pageSize: 10 } }),
  [`${G}/UpdateMemory`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: {
      memory: { name: fx.memOrg, text: `the org-1 weekly meeting moved, take ${n}` },
      updateMask: { paths: ['text'] },
    },
  }),
  [`${G}/DeleteMemory`]: async (fx, h, n) => {
    const { memory } = await h.governance.createMemory(
      { memory: { type: MemoryType.EPISODE, text: `a memory to delete ${n}`, confidence: 0.9 } },
      { headers: await h.headers(fx.alice) },
    );
    return { caller: fx.alice, input: { name: memory!.name, reason: 'no longer true' } };
  },
  [`${G}/RestoreMemory`]: (fx) => ({ caller: fx.alice, input: { name: fx.memFact, reason: 'restore' } }),
  [`${G}/ReviewMemory`]: (fx) => ({
    caller: fx.admin,
    input: { name: fx.memFact, verdict: ReviewVerdict.APPROVE, reason: 'looks fine' },
  }),
  [`${G}/ListMemoryRevisions`]: (fx) => ({ caller: fx.alice, input: { parent: fx.memFact, pageSize: 5 } }),
  [`${G}/GetMemoryRevision`]: (fx) => ({ caller: fx.alice, input: { name: fx.revision } }),
  [`${G}/ExtractMemories`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: { memCell: fx.memCell, dryRun: true, requestId: `extract-${n}` },
  }),
  [`${G}/ProposeMemories`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: {
      candidates: [
        { type: MemoryType.EPISODE, text: `alice planned a winter trip, take ${n}`, confidence: 0.9 },
        {
          type: MemoryType.FACT,
          namespace: 'notes',
          key: `k${n % 5}`,
          value: { text: `value ${n}` },
          text: `note ${n}`,
          confidence: 0.9,
          scopeHint: Scope.ORG,
          orgId: 'org-1',
        },
      ],
      requestId: `propose-${n}`,
    },
  }),
  [`${G}/GetExtractionJob`]: (fx) => ({ caller: fx.alice, input: { name: fx.extractionJob } }),
  [`${G}/ListExtractionJobs`]: (fx) => ({ caller: fx.alice, input: { pageSize: 5, session: fx.session } }),
  [`${G}/ForgetUser`]: (fx, _h, n) => ({
    caller: { tenant: fx.tenant, subject: `leaver-${n}` },
    input: { subject: `leaver-${n}`, reason: 'left', requestId: `forget-${n}` },
  }),
  [`${G}/GetForgetReceipt`]: (fx) => ({ caller: fx.admin, input: { name: fx.forgetReceipt } }),
  [`${G}/ListForgetReceipts`]: (fx) => ({ caller: fx.admin, input: { pageSize: 5 } }),
  [`${G}/GetPolicy`]: (fx) => ({ caller: fx.admin, input: { name: 'policy' } }),
  [`${G}/ExportUser`]: (fx) => ({ caller: fx.alice, input: {} }),
  [`${G}/ImportUser`]: (fx, _h, n) => {
    const lines = exportLines(fx.tenant, `importer-${n}`, n);
    return {
      caller: { tenant: fx.tenant, subject: `importer-${n}` },
      input: [{ subject: '', validateOnly: false, lines: lines.slice(0, 2) }, { lines: lines.slice(2) }],
    };
  },

  [`${I}/IngestDocument`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: {
      document: { mimeType: 'text/plain', displayName: `doc ${n}`, scope: Scope.ORG, orgId: 'org-1' },
      content: content(n),
      requestId: `ingest-${n}`,
    },
  }),
  [`${I}/StreamIngestDocument`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: [
      {
        payload: {
          case: 'header',
          value: {
            document: { mimeType: 'text/markdown', displayName: `streamed ${n}` },
            requestId: `stream-${n}`,
          },
        },
      },
      { payload: { case: 'part', value: { data: content(n).slice(0, 10) } } },
      { payload: { case: 'part', value: { data: content(n).slice(10) } } },
    ],
  }),
  [`${I}/GetDocument`]: (fx) => ({ caller: fx.alice, input: { name: fx.document } }),
  [`${I}/ListDocuments`]: (fx) => ({ caller: fx.alice, input: { pageSize: 10 } }),
  [`${I}/DeleteDocument`]: async (fx, h, n) => {
    const { document } = await h.ingestion.ingestDocument(
      { document: { mimeType: 'text/plain' }, content: new TextEncoder().encode(`to delete ${n}`) },
      { headers: await h.headers(fx.alice) },
    );
    return { caller: fx.alice, input: { name: document!.name } };
  },
  [`${I}/GetChunk`]: (fx) => ({ caller: fx.alice, input: { name: fx.chunk } }),
  [`${I}/ListChunks`]: (fx) => ({ caller: fx.alice, input: { parent: fx.document, pageSize: 10 } }),
  [`${I}/CreateSession`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: {
      session: {
        displayName: `s ${n}`,
        externalId: `ext-${n}`,
        timeZone: 'Asia/Shanghai',
        languageCode: 'zh-CN',
      },
      requestId: `session-${n}`,
    },
  }),
  [`${I}/GetSession`]: (fx) => ({ caller: fx.alice, input: { name: fx.session } }),
  [`${I}/ListSessions`]: (fx) => ({ caller: fx.alice, input: { pageSize: 10 } }),
  [`${I}/UpdateSession`]: async (fx, h, n) => {
    const session = await newSession(fx, h);
    return {
      caller: fx.alice,
      input: {
        session: { name: session.name, displayName: `renamed ${n}` },
        updateMask: { paths: ['display_name'] },
      },
    };
  },
  [`${I}/DeleteSession`]: async (fx, h) => {
    const session = await newSession(fx, h);
    return { caller: fx.alice, input: { name: session.name } };
  },
  [`${I}/AppendMessages`]: async (fx, h, n) => {
    const session = await newSession(fx, h);
    return {
      caller: fx.alice,
      input: {
        parent: session.name,
        messages: [
          {
            role: MessageRole.USER,
            content: `question ${n}: what tea do I like?`,
            occurTime: timestampFromMs(Date.now() - 2_000),
          },
          {
            role: MessageRole.ASSISTANT,
            content: 'Green tea.',
            occurTime: timestampFromMs(Date.now() - 1_000),
          },
        ],
        requestId: `append-${n}`,
      },
    };
  },
  [`${I}/GetMessage`]: (fx) => ({ caller: fx.alice, input: { name: fx.messages[0] } }),
  [`${I}/ListMessages`]: (fx) => ({ caller: fx.alice, input: { parent: fx.session, pageSize: 10 } }),
  [`${I}/MarkMessagesCompacted`]: (fx, _h, n) => ({
    caller: fx.service,
    input: { session: fx.session, throughSequence: 1n, requestId: `mark-${n}` },
  }),
  [`${I}/FlushSession`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: { name: fx.session, reason: 'leaving', requestId: `flush-${n}` },
  }),
  [`${I}/GetMemCell`]: (fx) => ({ caller: fx.alice, input: { name: fx.memCell } }),
  [`${I}/ListMemCells`]: (fx) => ({ caller: fx.alice, input: { parent: fx.session, pageSize: 10 } }),
  [`${I}/EraseSubject`]: (fx, _h, n) => ({
    caller: fx.service,
    input: {
      subject: `ghost-${n}`,
      forgetReceipt: fx.forgetReceipt,
      cutoffTime: timestampFromMs(Date.now()),
      requestId: `erase-i-${n}`,
    },
  }),

  [`${R}/Search`]: (fx) => ({ caller: fx.alice, input: { query: 'green tea', topK: 5 } }),
  [`${R}/Reindex`]: (fx, _h, n) => ({
    caller: fx.admin,
    input: { kinds: [ItemKind.MEMORY], mode: ReindexMode.MISSING_ONLY, requestId: `reindex-${n}` },
  }),
  [`${R}/GetReindexJob`]: (fx) => ({ caller: fx.admin, input: { name: fx.reindexJob } }),
  [`${R}/ListReindexJobs`]: (fx) => ({ caller: fx.admin, input: { pageSize: 5 } }),
  [`${R}/CancelReindexJob`]: (fx) => ({ caller: fx.admin, input: { name: fx.reindexJob } }),
  [`${R}/GetIndexStatus`]: (fx) => ({ caller: fx.admin, input: {} }),

  [`${C}/BuildContext`]: (fx) => ({
    caller: fx.alice,
    input: { session: fx.session, userMessage: 'What tea do I like?', budget, includeTrace: true },
  }),
  [`${C}/Chat`]: (fx) => ({ caller: fx.alice, input: { session: fx.session, userMessage: 'Hello', budget } }),
  [`${C}/CompactSession`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: { session: fx.session, force: true, requestId: `compact-${n}` },
  }),
  [`${C}/GetSessionState`]: (fx) => ({ caller: fx.alice, input: { name: `${fx.session}/state` } }),
  [`${C}/UpdateSessionState`]: (fx, _h, n) => ({
    caller: fx.alice,
    input: {
      sessionState: {
        name: `${fx.session}/state`,
        summary: `summary ${n}`,
        keyPoints: [{ text: 'likes green tea' }],
      },
      updateMask: { paths: ['summary', 'key_points'] },
    },
  }),
  [`${C}/DeleteSessionState`]: async (fx, h) => {
    const session = await newSession(fx, h);
    return { caller: fx.service, input: { name: `${session.name}/state` } };
  },
  [`${C}/EraseSubject`]: (fx, _h, n) => ({
    caller: fx.service,
    input: {
      subject: `ghost-${n}`,
      forgetReceipt: fx.forgetReceipt,
      cutoffTime: timestampFromMs(Date.now()),
      requestId: `erase-c-${n}`,
    },
  }),
};
