import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ItemKind, Scope } from '@engram/contracts/common';
import { DecisionOutcome, type GovernanceService, MemoryType } from '@engram/contracts/governance';
import { type IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { DegradedReason, Fusion, IndexBackend, QueryForm, Recency } from '@engram/contracts/retrieval';
import type {
  SearchRequestSchema,
  SearchRequest,
  SearchResponse,
  RetrievalService,
} from '@engram/contracts/retrieval';
import { errorInfoOf } from '@engram/runtime';
import { openStore, type Store } from '@engram/store';
import { authorized, callerOf, newSecret, sleep, startServer, tempDir } from './harness.js';

const secret = newSecret();
const dataDir = tempDir();
let stop: () => Promise<void>;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let retrieval: Client<typeof RetrievalService>;
/** A second connection to the embedded database, to make the source of truth drift from the index. */
let store: Store;

beforeAll(async () => {
  ({ stop, ingestion, governance, retrieval } = await startServer(secret, { dataDir }));
  store = openStore({ target: join(dataDir, 'engram.db') });
}, 60_000);

afterAll(async () => {
  await store.close();
  await stop();
});

const as = callerOf(secret);

type Request = MessageInitShape<typeof SearchRequestSchema>;

async function search(subject: string, request: Request, orgIds: string[] = []): Promise<SearchResponse> {
  return retrieval.search(request, await as(subject, { orgIds }));
}

/**
 * Searches until `done` holds and no candidate still lacks its dense vector (the indexer runs in
 * the background and is lexical-first, decision 0032), at most 30 s.
 */
async function searchUntil(
  subject: string,
  request: Request,
  done: (response: SearchResponse) => boolean,
  orgIds: string[] = [],
): Promise<SearchResponse> {
  const settled = (r: SearchResponse) => done(r) && r.stats?.densePendingCandidates === 0;
  let response = await search(subject, request, orgIds);
  for (let attempt = 0; attempt < 300 && !settled(response); attempt += 1) {
    await sleep(100);
    response = await search(subject, request, orgIds);
  }
  return response;
}

const names = (response: SearchResponse) => response.results.map((r) => r.name);
const memoryTexts = (response: SearchResponse) =>
  response.results.flatMap((r) => (r.item.case === 'memory' ? [r.item.value.text] : []));

async function propose(
  subject: string,
  candidate: {
    type: MemoryType;
    namespace?: string;
    key?: string;
    text: string;
    scopeHint?: Scope;
    orgId?: string;
  },
  orgIds: string[] = [],
): Promise<string> {
  const { decisions } = await governance.proposeMemories(
    {
      candidates: [
        {
          confidence: 0.9,
          ...(candidate.type === MemoryType.FACT ? { value: { text: candidate.text } } : {}),
          ...candidate,
        },
      ],
    },
    await as(subject, { orgIds }),
  );
  if (decisions[0]?.outcome !== DecisionOutcome.ACCEPTED)
    throw new Error(JSON.stringify([candidate.text, decisions[0]?.rule, decisions[0]?.reason]));
  return decisions[0].memory!.name;
}

async function expectError(
  promise: Promise<unknown>,
  code: Code,
  reason: string,
  metadata?: Record<string, string>,
): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(code);
    const info = errorInfoOf(error);
    expect(info?.reason).toBe(reason);
    if (metadata !== undefined) expect(info?.metadata).toMatchObject(metadata);
    return;
  }
  throw new Error(`expected ${reason}`);
}

describe('Search through gRPC on the embedded defaults', () => {
  const alice = { tea: '', violin: '', hangzhou: '', standup: '', dumplings: '' };
  let documentName = '';
  let sessionName = '';

  beforeAll(async () => {
    alice.tea = await propose('alice', {
      type: MemoryType.FACT,
      namespace: 'profile',
      key: 'drink',
      text: 'Alice 最喜欢喝西湖龙井绿茶，不喝咖啡',
    });
    alice.violin = await propose('alice', {
      type: MemoryType.FACT,
      namespace: 'hobby',
      key: 'instrument',
      text: 'Alice plays the violin in a string quartet every weekend',
    });
    alice.hangzhou = await propose('alice', {
      type: MemoryType.EPISODE,
      text: 'Alice hiked around West Lake in Hangzhou last spring and drank tea at a tea house',
    });
    alice.standup = await propose(
      'alice',
      {
        type: MemoryType.FACT,
        namespace: 'team',
        key: 'standup',
        text: 'The platform team standup is every Wednesday at 10am in room Aurora',
        scopeHint: Scope.ORG,
        orgId: 'org-1',
      },
      ['org-1'],
    );
    const { document } = await ingestion.ingestDocument(
      {
        document: { mimeType: 'text/plain', displayName: 'Tea notes' },
        content: new TextEncoder().encode(
          '绿茶的冲泡方法：水温八十度左右，先温杯，再投茶，浸泡两分钟。\n\nBrewing oolong needs boiling water and a clay teapot.',
        ),
        waitForIndex: true,
      },
      await as('alice'),
    );
    documentName = document!.name;
    const { session } = await ingestion.createSession({ session: { timeZone: 'UTC' } }, await as('alice'));
    sessionName = session!.name;
    const at = Date.now() - 60_000;
    await ingestion.appendMessages(
      {
        parent: sessionName,
        messages: [
          {
            role: MessageRole.USER,
            content: 'How do I fold dumplings for the lunar new year?',
            occurTime: timestampFromMs(at),
          },
          {
            role: MessageRole.ASSISTANT,
            content: 'Put the filling in the middle, fold the wrapper in half and pleat the edge.',
            occurTime: timestampFromMs(at + 1_000),
          },
        ],
      },
      await as('alice'),
    );
    // Wait until the indexer has caught up with everything written above.
    const caughtUp = await searchUntil(
      'alice',
      { query: 'dumplings violin 绿茶 Hangzhou', topK: 20, options: { minScore: 0 } },
      (r) => r.results.length >= 5,
    );
    expect(caughtUp.results.length).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it('finds memories, chunks and rounds for a Chinese query, explained', async () => {
    const response = await search('alice', { query: '绿茶怎么泡', explain: true });
    const top = response.results.slice(0, 3).map((r) => r.name);
    expect(top).toContain(alice.tea);
    expect(top.some((n) => n.startsWith(`${documentName}/chunks/`))).toBe(true);
    const chunk = response.results.find((r) => r.item.case === 'chunk');
    expect(chunk?.kind).toBe(ItemKind.CHUNK);
    expect(chunk?.document?.name).toBe(documentName);
    expect(chunk?.document?.displayName).toBe('Tea notes');

    const { stats } = response;
    expect(stats).toBeDefined();
    expect(stats!.denseCandidates).toBeGreaterThan(0);
    expect(stats!.lexicalCandidates).toBeGreaterThan(0);
    expect(stats!.mergedCandidates).toBeGreaterThanOrEqual(response.results.length);
    expect(stats!.driftDropped).toBe(0);
    expect(stats!.degraded).toBe(false);
    // The default bilingual vector space: bge-small-zh and MiniLM side by side (decision 0021).
    expect(stats!.embeddingModel).toBe(
      'bilingual(BAAI/bge-small-zh-v1.5@q8+sentence-transformers/all-MiniLM-L6-v2@q8)',
    );
    expect(stats!.embeddingDimensions).toBe(896);
    expect(stats!.queryLanguage).toBe('zh');
    expect(stats!.queryAsksCurrentState).toBe(false);
    expect(stats!.queryTimeWindow).toBeUndefined();
    expect(stats!.rerankModel).toBe('');
    expect(stats!.queryTerms).toBeGreaterThan(0);
    expect(stats!.indexBackend).toBe(IndexBackend.EMBEDDED);
    // A question: the question weights (0.2 / 0.8), adapted to the lexical coverage; score
    // fusion and bounded recency.
    expect(stats!.queryForm).toBe(QueryForm.QUESTION);
    expect(stats!.lexicalCoverage).toBeGreaterThan(0);
    const vectorWeight = 0.2 + 0.8 * Math.max(0, 1 - stats!.lexicalCoverage! / 0.5);
    expect(stats!.appliedOptions?.vectorWeight).toBeCloseTo(vectorWeight, 12);
    expect(stats!.appliedOptions?.textWeight).toBeCloseTo(1 - vectorWeight, 12);
    expect(stats!.appliedOptions).toMatchObject({
      fusion: Fusion.SCORE,
      rrfK: 60,
      recency: Recency.BOUNDED,
      recencyWeight: 0.05,
      timeWindowWeight: 0.3,
      rerankEnabled: false,
      coverageThreshold: 0.5,
      newerFirst: true,
      decayEnabled: true,
      halfLifeDays: 30,
      mmrEnabled: true,
      mmrLambda: 0.7,
      candidateMultiple: 4,
      minScore: 0,
    });
    expect(stats!.appliedOptions?.referenceTime).toBeDefined();
    expect(stats!.elapsed).toBeDefined();

    response.results.forEach((r, i) => {
      expect(r.rank).toBe(i + 1);
      const b = r.breakdown!;
      expect(b).toBeDefined();
      expect(b.fused).toBeCloseTo(
        vectorWeight * b.vectorNormalized + (1 - vectorWeight) * b.textNormalized,
        12,
      );
      expect(b.timeWindowFactor).toBe(1);
      expect(b.relevance).toBe(b.fused);
      expect(b.decayFactor).toBeCloseTo(Math.exp((-Math.LN2 / 30) * b.ageDays), 12);
      // Bounded recency: age takes at most a twentieth of the relevance away.
      expect(b.recencyMultiplier).toBeCloseTo(0.95 + 0.05 * b.decayFactor, 12);
      expect(b.finalScore).toBeCloseTo(b.relevance * b.recencyMultiplier, 12);
      expect(r.score).toBe(b.finalScore);
      expect(b.rerankScore).toBeUndefined();
      expect(b.mmrScore).toBeCloseTo(0.7 * b.finalScore - b.mmrPenalty, 12);
      expect(b.mmrPenalty).toBeCloseTo(0.3 * b.maxSimilarity, 12);
      if (b.vectorRaw === undefined) expect(b.denseRank).toBe(0);
      else expect(b.denseRank).toBeGreaterThan(0);
      if (b.textRaw === undefined) expect(b.textNormalized).toBe(0);
      else expect(b.lexicalRank).toBeGreaterThan(0);
    });
    expect(response.results[0]!.breakdown!.maxSimilarity).toBe(0);
    const tea = response.results.find((r) => r.name === alice.tea)!;
    expect(tea.breakdown!.matchedTerms).toContain('绿茶');
  });

  it('ranks an English query sensibly and returns rounds with both messages', async () => {
    const violin = await search('alice', { query: 'which instrument does she play? violin' });
    expect(violin.results[0]?.name).toBe(alice.violin);
    expect(violin.results[0]?.breakdown).toBeUndefined();

    const rounds = await search('alice', { query: 'how to fold dumplings' });
    const round = rounds.results.find((r) => r.item.case === 'round');
    expect(rounds.results[0]?.kind).toBe(ItemKind.ROUND);
    expect(round?.item.case).toBe('round');
    if (round?.item.case !== 'round') return;
    expect(round.item.value.session).toBe(sessionName);
    expect(round.name).toBe(round.item.value.userMessage);
    expect(round.item.value.assistantMessage).toMatch(new RegExp(`^${sessionName}/messages/`));
    expect(round.item.value.text).toBe(
      'How do I fold dumplings for the lunar new year?\n\nPut the filling in the middle, fold the wrapper in half and pleat the edge.',
    );
    expect(round.item.value.lastSequence).toBe(round.item.value.firstSequence + 1n);
  });

  it('narrows by kinds, memory types, namespaces, sessions and documents', async () => {
    const onlyMemories = await search('alice', { query: '绿茶', filter: { kinds: [ItemKind.MEMORY] } });
    expect(onlyMemories.results.length).toBeGreaterThan(0);
    expect(onlyMemories.results.every((r) => r.kind === ItemKind.MEMORY)).toBe(true);

    const episodes = await search('alice', {
      query: 'tea',
      filter: { kinds: [ItemKind.MEMORY], memoryTypes: [MemoryType.EPISODE] },
    });
    expect(names(episodes)).toEqual([alice.hangzhou]);

    // Kind-specific filters leave the other kinds alone.
    const factsAndChunks = await search('alice', {
      query: '绿茶 tea',
      filter: { kinds: [ItemKind.MEMORY, ItemKind.CHUNK], memoryTypes: [MemoryType.FACT] },
    });
    expect(factsAndChunks.results.some((r) => r.kind === ItemKind.CHUNK)).toBe(true);
    expect(names(factsAndChunks)).not.toContain(alice.hangzhou);

    const hobbies = await search('alice', { query: 'violin tea', filter: { namespaces: ['hobby'] } });
    expect(names(hobbies)).toContain(alice.violin);
    expect(names(hobbies)).not.toContain(alice.tea);

    const inSession = await search('alice', {
      query: 'dumplings tea violin',
      filter: { kinds: [ItemKind.ROUND], sessions: [sessionName] },
    });
    expect(inSession.results).toHaveLength(1);
    const otherSession = await search('alice', {
      query: 'dumplings',
      filter: { kinds: [ItemKind.ROUND], sessions: ['sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV'] },
    });
    expect(otherSession.results).toHaveLength(0);

    const inDocument = await search('alice', {
      query: 'tea',
      filter: { kinds: [ItemKind.CHUNK], documents: [documentName] },
    });
    expect(inDocument.results.length).toBeGreaterThan(0);
    expect(inDocument.results.every((r) => r.name.startsWith(`${documentName}/chunks/`))).toBe(true);

    const future = Date.now() + 86_400_000;
    const none = await search('alice', {
      query: 'tea',
      filter: { occurTime: { startTime: timestampFromMs(future) } },
    });
    expect(none.results).toHaveLength(0);
  });

  it('never shows another user alice’s SELF items, and ORG items only to members', async () => {
    const query = { query: '绿茶 violin dumplings Hangzhou standup Wednesday', topK: 50 };
    const own = await search('alice', query, ['org-1']);
    expect(names(own)).toEqual(expect.arrayContaining([alice.tea, alice.violin, alice.standup]));

    const bob = await search('bob', query, ['org-1']);
    expect(names(bob)).toEqual([alice.standup]);
    const carol = await search('carol', query);
    expect(carol.results).toHaveLength(0);
    // Alice without org-1 in her credential no longer sees the ORG memory.
    expect(names(await search('alice', query))).not.toContain(alice.standup);
    // Narrowing to SELF hides the ORG memory from a member.
    const self = await search('alice', { ...query, filter: { scopes: [Scope.SELF] } }, ['org-1']);
    expect(names(self)).not.toContain(alice.standup);
    expect(names(self)).toContain(alice.violin);
    // Another tenant sees nothing.
    const other = await retrieval.search(
      query,
      await authorized(secret, { subject: 'alice', tenantId: 'globex' }),
    );
    expect(other.results).toHaveLength(0);
  });

  it('drops rows that drifted from the index and forgets deleted memories', async () => {
    // Drift: the source row changes behind the indexer's back (no outbox event).
    const hangzhouId = alice.hangzhou.slice('memories/'.length);
    await store.db.updateTable('memories').set({ status: 'DELETED' }).where('id', '=', hangzhouId).execute();
    const drifted = await search('alice', { query: 'West Lake Hangzhou' });
    expect(names(drifted)).not.toContain(alice.hangzhou);
    expect(drifted.stats!.driftDropped).toBeGreaterThanOrEqual(1);

    // A deletion through governance reaches the index through the outbox.
    await governance.deleteMemory({ name: alice.violin }, await as('alice'));
    const gone = await search('alice', { query: 'violin string quartet' });
    expect(names(gone)).not.toContain(alice.violin);
    const repaired = await searchUntil(
      'alice',
      // (FACT memories only: the EPISODE drifted above stays in the index, nothing told the indexer.)
      { query: 'violin string quartet', filter: { memoryTypes: [MemoryType.FACT] } },
      (r) => r.stats!.driftDropped === 0,
    );
    expect(repaired.stats!.driftDropped).toBe(0);
    expect(memoryTexts(repaired)).not.toContain('Alice plays the violin in a string quartet every weekend');
  }, 60_000);

  it('answers bad requests with the documented reasons', async () => {
    const bad = async (request: Request, code: Code, reason: string, meta?: Record<string, string>) =>
      expectError(search('alice', request, ['org-1']), code, reason, meta);
    await bad({ query: '   ' }, Code.InvalidArgument, 'FIELD_REQUIRED', { field: 'query' });
    await bad({ query: 'x'.repeat(4_001) }, Code.InvalidArgument, 'FIELD_INVALID', { field: 'query' });
    await bad({ query: 'tea', topK: 101 }, Code.InvalidArgument, 'FIELD_INVALID', { field: 'top_k' });
    await bad({ query: 'tea', topK: -1 }, Code.InvalidArgument, 'FIELD_INVALID', { field: 'top_k' });
    await bad({ query: 'tea', options: { vectorWeight: 1.5 } }, Code.InvalidArgument, 'FIELD_INVALID', {
      field: 'options.vector_weight',
    });
    await bad(
      { query: 'tea', options: { vectorWeight: 0, textWeight: 0 } },
      Code.InvalidArgument,
      'FIELD_INVALID',
    );
    await bad({ query: 'tea', options: { halfLifeDays: 0 } }, Code.InvalidArgument, 'FIELD_INVALID', {
      field: 'options.half_life_days',
    });
    await bad({ query: 'tea', options: { candidateMultiple: 21 } }, Code.InvalidArgument, 'FIELD_INVALID', {
      field: 'options.candidate_multiple',
    });
    await bad({ query: 'tea', options: { minScore: -1 } }, Code.InvalidArgument, 'FIELD_INVALID', {
      field: 'options.min_score',
    });
    for (const [options, field] of [
      [{ fusion: Fusion.RRF + 6 }, 'options.fusion'],
      [{ recency: Recency.MULTIPLICATIVE + 5 }, 'options.recency'],
      [{ recencyWeight: 1.5 }, 'options.recency_weight'],
      [{ timeWindowWeight: -0.1 }, 'options.time_window_weight'],
      [{ rerankWeight: 2 }, 'options.rerank_weight'],
      [{ rrfK: 0 }, 'options.rrf_k'],
      [{ rerankCandidates: 101 }, 'options.rerank_candidates'],
      [{ newerFirstSimilarity: 1.5 }, 'options.newer_first_similarity'],
      [{ newerFirstRelevance: -1 }, 'options.newer_first_relevance'],
    ] as const) {
      await bad({ query: 'tea', options }, Code.InvalidArgument, 'FIELD_INVALID', { field });
    }
    await bad(
      { query: 'tea', filter: { kinds: [ItemKind.UNSPECIFIED] } },
      Code.InvalidArgument,
      'FIELD_INVALID',
      {
        field: 'filter.kinds',
      },
    );
    await bad(
      { query: 'tea', filter: { memoryTypes: [MemoryType.UNSPECIFIED] } },
      Code.InvalidArgument,
      'FIELD_INVALID',
      { field: 'filter.memory_types' },
    );
    await bad(
      { query: 'tea', filter: { namespaces: ['Bad Space'] } },
      Code.InvalidArgument,
      'FIELD_INVALID',
      {
        field: 'filter.namespaces',
      },
    );
    await bad({ query: 'tea', filter: { minConfidence: 2 } }, Code.InvalidArgument, 'FIELD_INVALID', {
      field: 'filter.min_confidence',
    });
    await bad({ query: 'tea', filter: { sessions: ['session-1'] } }, Code.InvalidArgument, 'NAME_INVALID', {
      field: 'filter.sessions',
    });
    await bad(
      { query: 'tea', filter: { documents: ['documents/x'] } },
      Code.InvalidArgument,
      'NAME_INVALID',
      {
        field: 'filter.documents',
      },
    );
    const now = Date.now();
    await bad(
      {
        query: 'tea',
        filter: { occurTime: { startTime: timestampFromMs(now), endTime: timestampFromMs(now) } },
      },
      Code.InvalidArgument,
      'TIME_RANGE_INVALID',
    );
    await bad(
      { query: 'tea', filter: { scopes: [Scope.PLATFORM] } },
      Code.PermissionDenied,
      'SCOPE_NOT_ALLOWED',
    );
    await bad({ query: 'tea', filter: { orgIds: ['org-9'] } }, Code.PermissionDenied, 'SCOPE_NOT_ALLOWED');
    // The platform role may name SCOPE_PLATFORM.
    const platform = await retrieval.search(
      { query: 'tea', filter: { scopes: [Scope.PLATFORM] } },
      await as('alice', { roles: ['platform'] }),
    );
    expect(platform.results).toHaveLength(0);
  });

  it('applies options: lexical-only, dense-only, min_score and top_k', async () => {
    const lexical = await search('alice', { query: 'violin Hangzhou 绿茶', options: { vectorWeight: 0 } });
    expect(lexical.stats!.denseCandidates).toBe(0);
    expect(lexical.stats!.embeddingModel).toBe('');
    expect(lexical.stats!.appliedOptions?.textWeight).toBe(1);
    const dense = await search('alice', { query: 'violin', options: { textWeight: 0 } });
    expect(dense.stats!.lexicalCandidates).toBe(0);
    expect(dense.stats!.appliedOptions?.vectorWeight).toBe(1);
    const strict = await search('alice', { query: '绿茶', options: { minScore: 0.9 }, explain: true });
    expect(strict.results.every((r) => r.score >= 0.9)).toBe(true);
    expect(strict.stats!.minScoreDropped).toBeGreaterThan(0);
    const one = await search('alice', { query: '绿茶', topK: 1 });
    expect(one.results).toHaveLength(1);
  });
});

describe('Search ranking stages: time windows, newer statements first, the seed formula', () => {
  const DAY = 86_400_000;
  const now = Date.UTC(2026, 5, 15, 12);
  let oldCity = '';
  let newCity = '';
  let mayTrip = '';
  let marchTrip = '';

  beforeAll(async () => {
    const auth = await as('bob');
    const say = async (text: string, at: number) => {
      const { session } = await ingestion.createSession({ session: { timeZone: 'UTC' } }, auth);
      const { messages } = await ingestion.appendMessages(
        {
          parent: session!.name,
          messages: [
            { role: MessageRole.USER, content: text, occurTime: timestampFromMs(at) },
            { role: MessageRole.ASSISTANT, content: 'Noted.', occurTime: timestampFromMs(at + 1_000) },
          ],
        },
        auth,
      );
      return messages[0]!.name;
    };
    oldCity = await say(
      'I live in Boston, close to the harbour, and I love living in Boston.',
      now - 200 * DAY,
    );
    newCity = await say('We moved, so now I live in Denver, Colorado.', now - 100 * DAY);
    mayTrip = await say('We took a trip to the mountains and went hiking.', Date.UTC(2026, 4, 10));
    marchTrip = await say('We took a trip to the coast and went hiking.', Date.UTC(2026, 2, 10));
    await searchUntil(
      'bob',
      { query: 'trip hiking Boston Denver', topK: 20, filter: { kinds: [ItemKind.ROUND] } },
      (r) => [oldCity, newCity, mayTrip, marchTrip].every((n) => names(r).includes(n)),
    );
  }, 60_000);

  const rounds = { kinds: [ItemKind.ROUND] };
  const at = { referenceTime: timestampFromMs(now) };

  it('places the newer statement first when the question asks how things stand now', async () => {
    const response = await search('bob', {
      query: 'Where do I live?',
      filter: rounds,
      options: at,
      explain: true,
    });
    expect(response.stats!.queryAsksCurrentState).toBe(true);
    const order = names(response);
    expect(order.indexOf(newCity)).toBeLessThan(order.indexOf(oldCity));
    expect(order.indexOf(oldCity)).toBeGreaterThanOrEqual(0);
    // Without it, the older statement (more words in common with the question) leads.
    const off = await search('bob', {
      query: 'Where do I live?',
      filter: rounds,
      options: { ...at, newerFirst: false },
    });
    expect(names(off).indexOf(oldCity)).toBeLessThan(names(off).indexOf(newCity));
    const moved = response.results.find((r) => r.name === newCity)!;
    expect(moved.breakdown!.supersedes).toBe(oldCity);
  });

  it('prefers the time a question names, and then applies no recency', async () => {
    const response = await search('bob', {
      query: 'Where did we go hiking last May?',
      filter: rounds,
      options: at,
      explain: true,
    });
    const { stats } = response;
    expect(stats!.queryTimeExpressions).toEqual(['last May']);
    expect(stats!.queryTimeWindow?.startTime).toEqual(timestampFromMs(Date.UTC(2026, 4, 1)));
    expect(stats!.queryTimeWindow?.endTime).toEqual(timestampFromMs(Date.UTC(2026, 5, 1)));
    expect(names(response)[0]).toBe(mayTrip);
    const may = response.results.find((r) => r.name === mayTrip)!.breakdown!;
    const march = response.results.find((r) => r.name === marchTrip)!.breakdown!;
    expect(may.timeWindowFactor).toBe(1);
    expect(march.timeWindowFactor).toBeCloseTo(0.7, 12);
    expect([may.recencyMultiplier, march.recencyMultiplier]).toEqual([1, 1]);
    // time_window_weight 0 ignores the named time.
    const ignored = await search('bob', {
      query: 'Where did we go hiking last May?',
      filter: rounds,
      options: { ...at, timeWindowWeight: 0 },
    });
    expect(ignored.stats!.queryTimeWindow).toBeUndefined();
  });

  it('keeps the seed formula available exactly', async () => {
    const response = await search('bob', {
      query: 'trip hiking',
      filter: rounds,
      explain: true,
      options: {
        ...at,
        fusion: Fusion.MIN_MAX,
        recency: Recency.MULTIPLICATIVE,
        timeWindowWeight: 0,
        newerFirst: false,
      },
    });
    expect(response.stats!.appliedOptions).toMatchObject({
      vectorWeight: 0.7,
      fusion: Fusion.MIN_MAX,
      recency: Recency.MULTIPLICATIVE,
    });
    for (const r of response.results) {
      const b = r.breakdown!;
      expect(b.fused).toBeCloseTo(0.7 * b.vectorNormalized + 0.3 * b.textNormalized, 12);
      expect(b.recencyMultiplier).toBe(b.decayFactor);
      expect(r.score).toBeCloseTo(b.fused * Math.exp((-Math.LN2 / 30) * b.ageDays), 12);
    }
  });
});

describe('Upgrading from the single-model index', () => {
  it('rebuilds a stale index at start and answers lexical-only until the swap', async () => {
    const dir = tempDir();
    const start = (env: Record<string, string>) => startServer(secret, { dataDir: dir, env });
    // The earlier index: bge-small-zh alone.
    const before = await start({ ENGRAM_LOCAL_EMBEDDINGS: 'bge-small-zh' });
    const auth = await as('dora');
    const { decisions } = await before.governance.proposeMemories(
      {
        candidates: [
          {
            type: MemoryType.EPISODE,
            text: 'Dora repaired the harbour lighthouse lamp in March',
            confidence: 0.9,
          },
        ],
      },
      auth,
    );
    const name = decisions[0]!.memory!.name;
    let found = await before.retrieval.search({ query: 'lighthouse lamp' }, auth);
    for (let i = 0; i < 100 && !names(found).includes(name); i++) {
      await sleep(100);
      found = await before.retrieval.search({ query: 'lighthouse lamp' }, auth);
    }
    expect(found.stats!.embeddingModel).toBe('BAAI/bge-small-zh-v1.5@q8');
    await before.server.shutdown();

    // The upgrade without the rebuild at start: the index is stale; Search answers from its
    // lexical signal when allowed, else UNAVAILABLE naming the index; nothing is written to it.
    const waiting = await start({ ENGRAM_REBUILD_STALE_INDEX: 'off' });
    const stale = await waiting.retrieval.search({ query: 'lighthouse lamp', allowDegraded: true }, auth);
    expect(stale.stats!.degraded).toBe(true);
    expect(stale.stats!.degradedReason).toBe(DegradedReason.INDEX_STALE);
    expect(names(stale)).toContain(name);
    await expectError(
      waiting.retrieval.search({ query: 'lighthouse lamp' }, auth),
      Code.Unavailable,
      'DEPENDENCY_UNAVAILABLE',
      { dependency: 'vector-index' },
    );
    await waiting.server.shutdown();

    // With it (the default): every answer is either lexical-only (stale, the rebuild running) or
    // from the rebuilt index in the bilingual space; the memory is found throughout.
    const after = await start({});
    let response = await after.retrieval.search({ query: 'lighthouse lamp', allowDegraded: true }, auth);
    const seen = new Set<string>();
    for (let i = 0; i < 300 && response.stats!.degraded; i++) {
      seen.add(DegradedReason[response.stats!.degradedReason]);
      expect(names(response)).toContain(name);
      await sleep(100);
      response = await after.retrieval.search({ query: 'lighthouse lamp', allowDegraded: true }, auth);
    }
    expect([...seen].every((reason) => reason === 'INDEX_STALE')).toBe(true);
    expect(response.stats!.degraded).toBe(false);
    expect(response.stats!.embeddingModel).toBe(
      'bilingual(BAAI/bge-small-zh-v1.5@q8+sentence-transformers/all-MiniLM-L6-v2@q8)',
    );
    expect(names(response)).toContain(name);
    // New writes are indexed again after the swap.
    const { decisions: more } = await after.governance.proposeMemories(
      {
        candidates: [
          { type: MemoryType.EPISODE, text: 'Dora painted the lighthouse door blue', confidence: 0.9 },
        ],
      },
      auth,
    );
    const painted = more[0]!.memory!.name;
    let later = await after.retrieval.search({ query: 'lighthouse door painted' }, auth);
    for (let i = 0; i < 100 && !names(later).includes(painted); i++) {
      await sleep(100);
      later = await after.retrieval.search({ query: 'lighthouse door painted' }, auth);
    }
    expect(names(later)).toContain(painted);
    await after.server.shutdown();
  }, 120_000);
});

describe('Search with a reranker behind an HTTP /rerank endpoint', () => {
  let stopReranked: () => Promise<void>;
  let client: Client<typeof RetrievalService>;
  let ingest: Client<typeof IngestionService>;
  let rerankServer: Server;
  const requests: { query: string; documents: string[] }[] = [];

  beforeAll(async () => {
    // The scripted model: relevance = 1 for documents mentioning "kettle", else 0.1.
    rerankServer = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        const body = JSON.parse(raw) as { query: string; documents: string[] };
        requests.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            results: body.documents.map((d, index) => ({
              index,
              relevance_score: d.includes('kettle') ? 1 : 0.1,
            })),
          }),
        );
      });
    });
    await new Promise<void>((resolve) => rerankServer.listen(0, '127.0.0.1', resolve));
    const port = (rerankServer.address() as AddressInfo).port;
    ({
      stop: stopReranked,
      retrieval: client,
      ingestion: ingest,
    } = await startServer(secret, {
      env: {
        ENGRAM_RERANKER: 'http',
        ENGRAM_RERANK_URL: `http://127.0.0.1:${port}/v1`,
        ENGRAM_RERANK_MODEL: 'scripted-reranker',
      },
    }));
    const auth = await as('carol');
    const { session } = await ingest.createSession({ session: { timeZone: 'UTC' } }, auth);
    const t = Date.now() - 60_000;
    await ingest.appendMessages(
      {
        parent: session!.name,
        messages: [
          {
            role: MessageRole.USER,
            content: 'Green tea wants water at eighty degrees.',
            occurTime: timestampFromMs(t),
          },
          { role: MessageRole.ASSISTANT, content: 'Noted.', occurTime: timestampFromMs(t + 1) },
          {
            role: MessageRole.USER,
            content: 'My kettle has a temperature dial.',
            occurTime: timestampFromMs(t + 2),
          },
          { role: MessageRole.ASSISTANT, content: 'Handy.', occurTime: timestampFromMs(t + 3) },
        ],
      },
      auth,
    );
  }, 60_000);

  afterAll(async () => {
    await stopReranked();
    await new Promise<void>((resolve) =>
      rerankServer.close(() => {
        resolve();
      }),
    );
  });

  it('scores the best candidates with the reranker and reports it', async () => {
    const auth = await as('carol');
    let response = await client.search(
      { query: 'green tea water temperature', explain: true, filter: { kinds: [ItemKind.ROUND] } },
      auth,
    );
    for (let i = 0; i < 100 && response.results.length < 2; i++) {
      await sleep(100);
      response = await client.search(
        { query: 'green tea water temperature', explain: true, filter: { kinds: [ItemKind.ROUND] } },
        auth,
      );
    }
    expect(response.stats!.rerankModel).toBe('http:scripted-reranker');
    expect(response.stats!.rerankedCandidates).toBe(2);
    expect(response.stats!.rerankElapsed).toBeDefined();
    expect(requests.at(-1)?.query).toBe('green tea water temperature');
    // The reranker's favourite leads: 0.7 · 1 + 0.3 · fused beats 0.7 · 0.1 + 0.3 · fused.
    expect(response.results[0]!.item.case === 'round' && response.results[0]!.item.value.text).toContain(
      'kettle',
    );
    for (const r of response.results) {
      expect([1, 0.1]).toContain(r.breakdown!.rerankScore);
    }
    const off = await client.search(
      {
        query: 'green tea water temperature',
        filter: { kinds: [ItemKind.ROUND] },
        options: { rerankEnabled: false },
      },
      auth,
    );
    expect(off.stats!.rerankModel).toBe('');
    expect(off.results[0]!.item.case === 'round' && off.results[0]!.item.value.text).toContain('Green tea');
  });
});

describe('Search with an unreachable embedding model', () => {
  let stopDegraded: () => Promise<void>;
  let client: Client<typeof RetrievalService>;

  beforeAll(async () => {
    ({ stop: stopDegraded, retrieval: client } = await startServer(secret, {
      env: {
        // Nothing listens on port 9: every embedding call fails.
        ENGRAM_EMBEDDINGS_BASE_URL: 'http://127.0.0.1:9/v1',
        ENGRAM_EMBEDDINGS_MODEL: 'unreachable',
        ENGRAM_EMBEDDINGS_API_KEY: 'test',
        ENGRAM_EMBEDDINGS_DIMENSIONS: '8',
      },
    }));
  }, 60_000);

  afterAll(async () => {
    await stopDegraded();
  });

  it('fails with UNAVAILABLE (dependency model) unless degraded answers are allowed', async () => {
    const request: SearchRequest['query'] = 'tea';
    await expectError(
      client.search({ query: request }, await as('alice')),
      Code.Unavailable,
      'DEPENDENCY_UNAVAILABLE',
      {
        dependency: 'model',
      },
    );
    const degraded = await client.search({ query: request, allowDegraded: true }, await as('alice'));
    expect(degraded.stats).toMatchObject({
      degraded: true,
      degradedReason: DegradedReason.EMBEDDING_UNAVAILABLE,
      denseCandidates: 0,
      embeddingModel: '',
    });
    expect(degraded.stats!.degradedMessage).not.toBe('');
    expect(degraded.stats!.appliedOptions).toMatchObject({ vectorWeight: 0, textWeight: 1 });
  }, 60_000);
});
