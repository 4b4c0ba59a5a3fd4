import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { createContextValues, type HandlerContext } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  SearchRequestSchema,
  SearchResponseSchema,
  type SearchOptionsSchema,
} from '@engram/contracts/retrieval';
import { LocalEmbedder } from '@engram/embeddings';
import { encodeDocument } from '@engram/lexical';
import { createLogger, principalKey, type Principal } from '@engram/runtime';
import { MemoryRepository, inTransaction, type Store } from '@engram/store';
import { startQdrant, type RunningQdrant } from '@engram/testing';
import { createEmbeddedStore, createQdrantStore, type VectorStore } from '@engram/vector-index';
import { newMemory } from '../../../libs/store/test/fixtures.js';
import { dialects } from '../../../libs/store/test/harness.js';
import { memoryDocument } from '../src/domain/points.js';
import { ensureLiveIndex, indexSpec, type LiveIndex } from '../src/indexer/collections.js';
import { SearchHandlers } from '../src/search-handlers.js';

const TENANT = 't1';
const ALICE: Principal = { subject: 'alice', tenantId: TENANT, orgIds: [], roles: [], token: '' };

/** The source of truth and the vector index of one backend pair, and how to throw them away. */
async function openBackend(
  backend: 'embedded' | 'qdrant',
): Promise<{ store: Store; vectors: VectorStore; close: () => Promise<void> }> {
  const dialect = dialects.find((d) => d.name === (backend === 'embedded' ? 'sqlite' : 'mariadb'))!;
  const source = await dialect.open();
  let qdrant: RunningQdrant | undefined;
  let dir: string | undefined;
  if (backend === 'qdrant') qdrant = await startQdrant();
  else dir = mkdtempSync(join(tmpdir(), 'engram-search-'));
  const vectors =
    qdrant === undefined ? createEmbeddedStore({ path: dir! }) : createQdrantStore({ url: qdrant.url });
  return {
    store: source.store,
    vectors,
    close: async () => {
      await vectors.close();
      await qdrant?.stop();
      await source.dispose();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.each(['embedded', 'qdrant'] as const)('Search over lexical-first points (%s)', (backend) => {
  const embedder = new LocalEmbedder();
  let backendStack: Awaited<ReturnType<typeof openBackend>>;
  let live: LiveIndex;
  let handlers: SearchHandlers;
  const ids: Record<'embedded' | 'pending', string> = { embedded: '', pending: '' };

  /** A memory of alice's, written to the store and indexed with or without its dense vector. */
  async function remember(text: string, dense: boolean): Promise<string> {
    const memory = await inTransaction(backendStack.store, (trx) =>
      new MemoryRepository(backendStack.store).create(trx, newMemory(text, { tenantId: TENANT }), {
        action: 'CREATE',
        actorKind: 'USER',
        actorId: 'alice',
      }),
    );
    const doc = memoryDocument(memory)!;
    const sparse = encodeDocument(doc.text);
    await live.index.upsert([
      dense
        ? {
            id: doc.id,
            dense: (await embedder.embed([doc.text], 'document')).vectors[0],
            sparse,
            payload: doc.payload,
          }
        : { id: doc.id, sparse, payload: { ...doc.payload, densePendingSince: Date.now() } },
    ]);
    return memory.id;
  }

  const search = async (query: string, options?: MessageInitShape<typeof SearchOptionsSchema>) =>
    create(
      SearchResponseSchema,
      await handlers.search(
        create(SearchRequestSchema, { query, topK: 10, explain: true, ...(options ? { options } : {}) }),
        {
          values: createContextValues().set(principalKey, ALICE),
          signal: new AbortController().signal,
        } as unknown as HandlerContext,
      ),
    );

  beforeAll(async () => {
    backendStack = await openBackend(backend);
    live = await ensureLiveIndex(backendStack.vectors, indexSpec(embedder));
    handlers = new SearchHandlers({
      logger: createLogger({ service: 'test', level: 'silent' }),
      store: backendStack.store,
      embedder,
      live,
    });
    ids.embedded = await remember('I drink green tea every morning', true);
    ids.pending = await remember('My favourite green tea comes from Hangzhou', false);
  }, 120_000);
  afterAll(async () => {
    await embedder.close();
    await backendStack.close();
  });

  it('merges the points still waiting for their dense vector and counts them', async () => {
    const { results, stats } = await search('green tea');
    const names = results.map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining([`memories/${ids.embedded}`, `memories/${ids.pending}`]));
    expect(stats?.mergedCandidates).toBe(2);
    expect(stats?.densePendingCandidates).toBe(1);
    const pending = results.find((r) => r.name === `memories/${ids.pending}`)!;
    // Found by its words only: no dense score, a lexical rank.
    expect(pending.breakdown?.vectorRaw).toBeUndefined();
    expect(pending.breakdown?.lexicalRank).toBeGreaterThan(0);
    const embedded = results.find((r) => r.name === `memories/${ids.embedded}`)!;
    expect(embedded.breakdown?.denseRank).toBeGreaterThan(0);
  });

  it('counts no pending candidate when the query finds only embedded points', async () => {
    const { results, stats } = await search('drink every morning', { vectorWeight: 1 });
    expect(results.map((r) => r.name)).toEqual([`memories/${ids.embedded}`]);
    expect(stats?.densePendingCandidates).toBe(0);
  });

  it('reports the time of every stage, in order, within the elapsed time', async () => {
    const { stats } = await search('green tea');
    const stages = stats?.stages ?? [];
    expect(stages.map((s) => s.stage)).toEqual([
      'plan',
      'embed',
      'candidates',
      'hydration',
      'vectors',
      'rerank',
      'ranking',
      'response',
    ]);
    const ms = (d: { seconds: bigint; nanos: number } | undefined) =>
      d === undefined ? NaN : Number(d.seconds) * 1000 + d.nanos / 1e6;
    const total = stages.reduce((a, s) => a + ms(s.elapsed), 0);
    expect(stages.every((s) => ms(s.elapsed) >= 0)).toBe(true);
    // `elapsed` is rounded to whole milliseconds.
    expect(total).toBeLessThanOrEqual(ms(stats?.elapsed) + 1);
  });
});
