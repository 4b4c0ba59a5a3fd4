/**
 * `RetrievalService.Search`: hybrid dense + BM25 retrieval under a server-side visibility filter,
 * re-read from the source of truth, ranked by `rank` (domain/ranking.ts). The formula and every
 * rule are on `SearchOptions` in proto/engram/retrieval/v1/search.proto.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { HandlerContext } from '@connectrpc/connect';
import { Code } from '@connectrpc/connect';
import {
  DegradedReason,
  IndexBackend,
  QueryForm,
  type SearchRequest,
  type SearchResponseSchema,
  type SearchResultSchema,
} from '@engram/contracts/retrieval';
import type { Embedder, Reranker } from '@engram/embeddings';
import { encodeQuery, tokenize } from '@engram/lexical';
import { errors, isEngramError, requirePrincipal, type Logger, type Principal } from '@engram/runtime';
import {
  DocumentRepository,
  MemoryRepository,
  SessionRepository,
  type ChunkRecord,
  type DocumentRecord,
  type MemoryRecord,
  type MessageRecord,
  type SessionRecord,
  type Store,
} from '@engram/store';
import type {
  IndexFilter,
  ItemKind,
  PointPayload,
  ScoredPoint,
  VectorIndex,
  Visibility,
} from '@engram/vector-index';
import { firstReply } from './domain/points.js';
import { degradedOptions, rank, type RankingCandidate, type RankingOptions } from './domain/ranking.js';
import type { LiveIndex } from './indexer/collections.js';
import {
  KIND_ENUMS,
  appliedOptions,
  breakdownMessage,
  chunkMessage,
  documentMessage,
  memoryMessage,
  roundMessage,
  roundText,
  searchPlan,
  type SearchFilterPlan,
  type SearchPlan,
} from './search-api.js';

/** What Search runs on. */
export interface SearchDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly embedder: Embedder;
  readonly live: LiveIndex;
  /** The rerank stage, when one is configured (`ENGRAM_RERANKER`). */
  readonly reranker?: Reranker | undefined;
}

/** Maximum number of matched terms in a breakdown (search.proto). */
const MAX_MATCHED_TERMS = 50;

/** One merged candidate, before hydration. */
interface Merged {
  readonly pointId: string;
  readonly payload: PointPayload;
  dense?: number;
  text?: number;
  denseRank?: number;
  lexicalRank?: number;
}

/** A candidate re-read from the source of truth. */
interface Hydrated {
  readonly merged: Merged;
  readonly name: string;
  readonly kind: ItemKind;
  readonly text: string;
  readonly occurredAt?: number;
  readonly createdAt: number;
  readonly result: Pick<MessageInitShape<typeof SearchResultSchema>, 'item' | 'document'>;
}

type Hydration = Hydrated | 'drift' | 'filtered';

/** The visibility of the principal, narrowed to the requested orgs when the request names some. */
function visibilityOf(principal: Principal, filter: SearchFilterPlan): Visibility {
  return {
    subject: principal.subject,
    orgIds: filter.orgIds.length > 0 ? filter.orgIds : principal.orgIds,
    platform: principal.roles.includes('platform'),
  };
}

/** Whether a row with this scope is visible under `who` (and the request's scope filter). */
function visible(
  row: { readonly scope: string; readonly ownerId: string; readonly orgId: string },
  who: Visibility,
  scopes: readonly string[],
): boolean {
  if (scopes.length > 0 && !scopes.includes(row.scope)) return false;
  switch (row.scope) {
    case 'SELF':
      return row.ownerId === who.subject;
    case 'ORG':
      return who.orgIds.includes(row.orgId);
    case 'PLATFORM':
      return who.platform;
    default:
      return false;
  }
}

/**
 * The index filters of one search: one per kind, since kind-specific filters (memory types,
 * namespaces, sessions, documents) must leave the other kinds untouched. A kind whose filters
 * cannot match anything gets no query.
 */
export function indexFilters(
  principal: Principal,
  filter: SearchFilterPlan,
  now: number,
): { kind: ItemKind; filter: IndexFilter }[] {
  const base: IndexFilter = {
    tenantId: principal.tenantId,
    visibleTo: visibilityOf(principal, filter),
    statuses: ['ACTIVE'],
    ...(filter.scopes.length > 0 ? { scopes: filter.scopes } : {}),
  };
  const out: { kind: ItemKind; filter: IndexFilter }[] = [];
  for (const kind of filter.kinds) {
    switch (kind) {
      case 'MEMORY': {
        let types: readonly string[] = filter.memoryTypes;
        if (filter.namespaces.length > 0) {
          // Only FACT memories have a namespace.
          if (types.length > 0 && !types.includes('FACT')) continue;
          types = ['FACT'];
        }
        out.push({
          kind,
          filter: {
            ...base,
            kinds: ['MEMORY'],
            evergreen: false,
            notExpiredAt: now,
            ...(types.length > 0 ? { memoryTypes: types } : {}),
            ...(filter.namespaces.length > 0 ? { namespaces: filter.namespaces } : {}),
          },
        });
        break;
      }
      case 'CHUNK':
        out.push({
          kind,
          filter: {
            ...base,
            kinds: ['CHUNK'],
            ...(filter.documentIds.length > 0 ? { documentIds: filter.documentIds } : {}),
            // A chunk has no occur time: its effective time is its creation.
            ...(filter.occurTime === undefined ? {} : { createdAt: filter.occurTime }),
          },
        });
        break;
      case 'ROUND':
        out.push({
          kind,
          filter: {
            ...base,
            kinds: ['ROUND'],
            ...(filter.sessionIds.length > 0 ? { sessionIds: filter.sessionIds } : {}),
            // A round always has an occur time.
            ...(filter.occurTime === undefined ? {} : { occurredAt: filter.occurTime }),
          },
        });
        break;
    }
  }
  return out;
}

/** The best `limit` points over the per-kind queries: the same as one query with their union. */
async function searchAll(
  filters: readonly { filter: IndexFilter }[],
  limit: number,
  query: (filter: IndexFilter) => Promise<ScoredPoint[]>,
): Promise<ScoredPoint[]> {
  const lists = await Promise.all(filters.map(({ filter }) => query(filter)));
  return lists
    .flat()
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}

/** Wraps an index failure as UNAVAILABLE `DEPENDENCY_UNAVAILABLE`, dependency `qdrant`. */
function indexUnavailable(error: unknown, index: VectorIndex): Error {
  if (isEngramError(error) && error.code !== Code.Unavailable) return error;
  const dependency = index.backend === 'QDRANT' ? 'qdrant' : 'vector-index';
  return errors.unavailable(dependency, 'the vector index is unreachable', { cause: error });
}

function inRange(t: number, range: SearchFilterPlan['occurTime']): boolean {
  if (range === undefined) return true;
  return (range.gte === undefined || t >= range.gte) && (range.lt === undefined || t < range.lt);
}

/** Re-reads candidates from the source of truth, with per-search caches of parents. */
class Hydrator {
  readonly #memories: MemoryRepository;
  readonly #documents: DocumentRepository;
  readonly #sessions: SessionRepository;
  readonly #documentCache = new Map<string, Promise<{ doc: DocumentRecord; indexed: number } | undefined>>();
  readonly #sessionCache = new Map<string, Promise<SessionRecord | undefined>>();
  #memoryBatch: Promise<Map<string, MemoryRecord>> | undefined;

  constructor(
    store: Store,
    private readonly tenantId: string,
    private readonly who: Visibility,
    private readonly filter: SearchFilterPlan,
    private readonly now: number,
  ) {
    this.#memories = new MemoryRepository(store);
    this.#documents = new DocumentRepository(store);
    this.#sessions = new SessionRepository(store);
  }

  /** Reads every MEMORY candidate in one query (instead of one read per candidate). */
  prefetch(candidates: readonly Merged[]): void {
    const ids = candidates
      .filter((m) => m.payload.kind === 'MEMORY' && m.payload.tenantId === this.tenantId)
      .map((m) => m.payload.sourceId);
    if (ids.length > 0) this.#memoryBatch = this.#memories.getMany(this.tenantId, ids);
  }

  async hydrate(merged: Merged): Promise<Hydration> {
    const p = merged.payload;
    if (p.tenantId !== this.tenantId) return 'drift';
    switch (p.kind) {
      case 'MEMORY': {
        const batch = await this.#memoryBatch;
        const record =
          batch !== undefined ? batch.get(p.sourceId) : await this.#memories.get(this.tenantId, p.sourceId);
        return this.#memory(merged, record);
      }
      case 'CHUNK': {
        if (p.documentId === undefined) return 'drift';
        const parent = await this.#document(p.documentId);
        if (parent === undefined) return 'drift';
        const chunk = await this.#documents.getChunk(this.tenantId, p.documentId, p.sourceId);
        return this.#chunk(merged, parent.doc, parent.indexed, chunk);
      }
      case 'ROUND':
        return this.#round(merged, p.sessionId);
    }
  }

  #memory(merged: Merged, m: MemoryRecord | undefined): Hydration {
    if (m === undefined || m.status !== 'ACTIVE' || m.evergreen) return 'drift';
    if (m.expiresAt !== undefined && m.expiresAt <= this.now) return 'drift';
    if (!visible(m, this.who, this.filter.scopes)) return 'drift';
    const f = this.filter;
    if (f.memoryTypes.length > 0 && !f.memoryTypes.includes(m.type)) return 'filtered';
    if (f.namespaces.length > 0 && (m.type !== 'FACT' || !f.namespaces.includes(m.namespace)))
      return 'filtered';
    if (f.minConfidence !== undefined && m.confidence < f.minConfidence) return 'filtered';
    if (!inRange(m.occurredAt ?? m.createdAt, f.occurTime)) return 'filtered';
    return {
      merged,
      name: `memories/${m.id}`,
      kind: 'MEMORY',
      text: m.text,
      ...(m.occurredAt === undefined ? {} : { occurredAt: m.occurredAt }),
      createdAt: m.createdAt,
      result: { item: { case: 'memory', value: memoryMessage(m) } },
    };
  }

  #document(id: string): Promise<{ doc: DocumentRecord; indexed: number } | undefined> {
    let cached = this.#documentCache.get(id);
    if (cached === undefined) {
      cached = (async () => {
        const doc = await this.#documents.get(this.tenantId, id);
        if (doc === undefined) return undefined;
        return { doc, indexed: await this.#documents.indexedChunkCount(this.tenantId, id) };
      })();
      this.#documentCache.set(id, cached);
    }
    return cached;
  }

  #chunk(merged: Merged, doc: DocumentRecord, indexed: number, chunk: ChunkRecord | undefined): Hydration {
    if (chunk === undefined || doc.state !== 'READY') return 'drift';
    if (!visible(doc, this.who, this.filter.scopes)) return 'drift';
    const f = this.filter;
    if (f.documentIds.length > 0 && !f.documentIds.includes(doc.id)) return 'filtered';
    if (!inRange(chunk.createdAt, f.occurTime)) return 'filtered';
    return {
      merged,
      name: `documents/${doc.id}/chunks/${chunk.id}`,
      kind: 'CHUNK',
      text: chunk.text,
      createdAt: chunk.createdAt,
      result: {
        item: { case: 'chunk', value: chunkMessage(chunk) },
        document: documentMessage(doc, indexed),
      },
    };
  }

  async #round(merged: Merged, sessionId: string | undefined): Promise<Hydration> {
    if (sessionId === undefined) return 'drift';
    let session = this.#sessionCache.get(sessionId);
    if (session === undefined) {
      session = this.#sessions.get(this.tenantId, sessionId);
      this.#sessionCache.set(sessionId, session);
    }
    const owner = await session;
    if (owner === undefined) return 'drift';
    // Rounds are SELF items of the session's owner.
    if (!visible({ scope: 'SELF', ownerId: owner.ownerId, orgId: '' }, this.who, this.filter.scopes)) {
      return 'drift';
    }
    const user = await this.#sessions.getMessage(this.tenantId, sessionId, merged.payload.sourceId);
    if (user?.role !== 'USER') return 'drift';
    const f = this.filter;
    if (f.sessionIds.length > 0 && !f.sessionIds.includes(sessionId)) return 'filtered';
    if (!inRange(user.occurredAt, f.occurTime)) return 'filtered';
    const following = await this.#sessions.listMessages(
      this.tenantId,
      sessionId,
      { fromSequence: user.sequence + 1 },
      { pageSize: 50 },
    );
    const reply: MessageRecord | undefined = firstReply(following.items);
    return {
      merged,
      name: `sessions/${sessionId}/messages/${user.id}`,
      kind: 'ROUND',
      text: roundText(user, reply),
      occurredAt: user.occurredAt,
      createdAt: user.createdAt,
      result: { item: { case: 'round', value: roundMessage(user, reply) } },
    };
  }
}

/** The query's distinct tokens found in `text`, in query order, at most 50. */
function matchedTerms(queryTerms: readonly string[], text: string): string[] {
  const present = new Set(tokenize(text));
  return queryTerms.filter((t) => present.has(t)).slice(0, MAX_MATCHED_TERMS);
}

function durationOf(ms: number) {
  const whole = Math.max(0, ms);
  return { seconds: BigInt(Math.floor(whole / 1000)), nanos: Math.round((whole % 1000) * 1_000_000) };
}

/** The Search handler, to spread into the service implementation. */
export function createSearchHandler(deps: SearchDeps) {
  return {
    async search(
      request: SearchRequest,
      context: HandlerContext,
    ): Promise<MessageInitShape<typeof SearchResponseSchema>> {
      const started = performance.now();
      const principal = requirePrincipal(context.values);
      const now = Date.now();
      const plan: SearchPlan = searchPlan(request, principal, now);
      const index = deps.live.index;
      const limit = plan.options.topK * plan.candidateMultiple;
      const filters = indexFilters(principal, plan.filter, now);
      const queryTerms = [...new Set(tokenize(plan.query))];

      // Dense signal: embed the query (degraded to lexical-only when allowed and the model fails).
      let options: RankingOptions = plan.options;
      let degraded: { reason: DegradedReason; message: string } | undefined;
      let embedding:
        { vector: Float32Array; truncated: boolean; model: string; dimensions: number } | undefined;
      if (plan.options.vectorWeight > 0 && deps.live.stale) {
        // The live collection holds another model's vectors (a rebuild is due or under way): the
        // query's vector cannot be compared with them; its BM25 vectors can.
        const message = 'the live index was built with another embedding model; a rebuild is due';
        if (!plan.allowDegraded) throw errors.unavailable('vector-index', message);
        degraded = { reason: DegradedReason.INDEX_STALE, message };
        options = degradedOptions(plan.options);
      } else if (plan.options.vectorWeight > 0) {
        try {
          const result = await deps.embedder.embed([plan.query], 'query', { signal: context.signal });
          const vector = result.vectors[0];
          if (vector === undefined) throw new Error('the embedder returned no vector');
          embedding = {
            vector,
            truncated: result.truncated[0] ?? false,
            model: result.model,
            dimensions: result.dimensions,
          };
        } catch (error) {
          if (context.signal.aborted) throw error;
          const message = error instanceof Error ? error.message : String(error);
          if (!plan.allowDegraded) {
            throw errors.unavailable('model', `the query could not be embedded: ${message}`, {
              cause: error,
            });
          }
          deps.logger.warn(
            { err: error },
            'search degraded to lexical-only: the query could not be embedded',
          );
          degraded = { reason: DegradedReason.EMBEDDING_UNAVAILABLE, message };
          options = degradedOptions(plan.options);
        }
      }

      // Candidates from the index, under the server-side filter.
      const sparse = encodeQuery(plan.query);
      const vector = embedding?.vector;
      const [dense, lexical] = await Promise.all([
        vector === undefined
          ? Promise.resolve([])
          : searchAll(filters, limit, (f) => index.searchDense(vector, f, limit)),
        options.textWeight > 0 && sparse.indices.length > 0
          ? searchAll(filters, limit, (f) => index.searchSparse(sparse, f, limit))
          : Promise.resolve([]),
      ]).catch((error: unknown) => {
        throw indexUnavailable(error, index);
      });
      let vectors = new Map<string, Float32Array>();

      const merged = new Map<string, Merged>();
      dense.forEach((p, i) => {
        merged.set(p.id, { pointId: p.id, payload: p.payload, dense: p.score, denseRank: i + 1 });
      });
      lexical.forEach((p, i) => {
        const existing = merged.get(p.id);
        if (existing === undefined) {
          merged.set(p.id, { pointId: p.id, payload: p.payload, text: p.score, lexicalRank: i + 1 });
        } else {
          existing.text = p.score;
          existing.lexicalRank = i + 1;
        }
      });

      // Stored vectors for MMR and newer-first (which applies only to current-state questions
      // that name no time).
      const newerFirst = options.newerFirst && plan.currentState && plan.window === undefined;
      if ((options.mmrEnabled || newerFirst) && merged.size > 0) {
        try {
          const points = await index.fetch([...merged.keys()], { withVectors: true });
          vectors = new Map(points.map((p) => [p.id, Float32Array.from(p.dense)]));
        } catch (error) {
          throw indexUnavailable(error, index);
        }
      }

      // Re-read every candidate from the source of truth; drifted rows are dropped and counted.
      const hydrator = new Hydrator(
        deps.store,
        principal.tenantId,
        visibilityOf(principal, plan.filter),
        plan.filter,
        now,
      );
      hydrator.prefetch([...merged.values()]);
      const hydrated = await Promise.all([...merged.values()].map((m) => hydrator.hydrate(m)));
      let driftDropped = 0;
      const byName = new Map<string, Hydrated>();
      const candidates: RankingCandidate[] = [];
      for (const h of hydrated) {
        if (h === 'drift') driftDropped += 1;
        if (typeof h === 'string' || byName.has(h.name)) continue;
        byName.set(h.name, h);
        candidates.push({
          id: h.name,
          dense: h.merged.dense,
          text: h.merged.text,
          vector: vectors.get(h.merged.pointId),
          occurredAt: h.occurredAt,
          createdAt: h.createdAt,
          denseRank: h.merged.denseRank,
          lexicalRank: h.merged.lexicalRank,
        });
      }
      if (driftDropped > 0) {
        deps.logger.info(
          { driftDropped },
          'search dropped index points that no longer match the source of truth',
        );
      }

      // The lexical signal's confidence: how much of the query its best candidate holds.
      let bestLexical: Hydrated | undefined;
      for (const h of byName.values()) {
        const r = h.merged.lexicalRank;
        if (r === undefined) continue;
        const incumbent = bestLexical?.merged.lexicalRank;
        if (incumbent === undefined || r < incumbent) bestLexical = h;
      }
      const lexicalCoverage =
        bestLexical === undefined || queryTerms.length === 0
          ? undefined
          : matchedTerms(queryTerms, bestLexical.text).length / queryTerms.length;
      const context_ = {
        denseExhausted: dense.length < limit,
        textExhausted: lexical.length < limit,
        lexicalCoverage,
        ...(plan.window === undefined ? {} : { window: plan.window }),
        currentState: plan.currentState,
      };

      // The rerank stage: the best candidates by relevance, scored by the cross-encoder.
      let rerank: { model: string; scored: number; ms: number } | undefined;
      let ranked = candidates;
      if (deps.reranker !== undefined && plan.rerank.enabled && candidates.length > 0) {
        const started = performance.now();
        const first = rank(
          candidates,
          {
            ...options,
            topK: Math.min(plan.rerank.candidates, candidates.length),
            mmrEnabled: false,
            newerFirst: false,
            decayEnabled: false,
            minScore: 0,
          },
          plan.referenceTime,
          context_,
          plan.form,
        );
        const texts = first.results.map((r) => byName.get(r.id)?.text ?? '');
        let scores: number[];
        try {
          scores = await deps.reranker.rerank(plan.query, texts, { signal: context.signal });
        } catch (error) {
          if (context.signal.aborted) throw error;
          throw isEngramError(error)
            ? error
            : errors.unavailable('reranker', String(error), { cause: error });
        }
        const scoreOf = new Map(first.results.map((r, i) => [r.id, scores[i]]));
        ranked = candidates.map((c) => {
          const score = scoreOf.get(c.id);
          return score === undefined ? c : { ...c, rerank: score };
        });
        rerank = { model: deps.reranker.model, scored: texts.length, ms: performance.now() - started };
      }

      const outcome = rank(ranked, options, plan.referenceTime, context_, plan.form);
      const results = outcome.results.flatMap((r) => {
        const h = byName.get(r.id);
        if (h === undefined) return [];
        return [
          {
            kind: KIND_ENUMS[h.kind],
            name: h.name,
            ...h.result,
            score: r.score,
            rank: r.rank,
            ...(plan.explain
              ? { breakdown: breakdownMessage(r.breakdown, matchedTerms(queryTerms, h.text)) }
              : {}),
          },
        ];
      });

      return {
        results,
        stats: {
          denseCandidates: dense.length,
          lexicalCandidates: lexical.length,
          mergedCandidates: merged.size,
          driftDropped,
          minScoreDropped: outcome.minScoreDropped,
          degraded: degraded !== undefined,
          ...(degraded === undefined
            ? {}
            : { degradedReason: degraded.reason, degradedMessage: degraded.message }),
          embeddingModel: embedding?.model ?? '',
          embeddingDimensions: embedding?.dimensions ?? 0,
          queryTruncated: embedding?.truncated ?? false,
          queryTerms: queryTerms.length,
          indexBackend: index.backend === 'QDRANT' ? IndexBackend.QDRANT : IndexBackend.EMBEDDED,
          appliedOptions: appliedOptions(outcome.options, plan.candidateMultiple, plan.referenceTime, {
            enabled: plan.rerank.enabled && deps.reranker !== undefined,
            candidates: plan.rerank.candidates,
          }),
          queryLanguage: plan.language,
          queryAsksCurrentState: plan.currentState,
          queryForm: QueryForm[plan.form],
          ...(lexicalCoverage === undefined ? {} : { lexicalCoverage }),
          ...(plan.window === undefined
            ? {}
            : {
                queryTimeWindow: {
                  startTime: timestampFromMs(plan.window.gte),
                  endTime: timestampFromMs(plan.window.lt),
                },
                queryTimeExpressions: [...plan.window.expressions],
              }),
          ...(rerank === undefined
            ? {}
            : {
                rerankModel: rerank.model,
                rerankedCandidates: rerank.scored,
                rerankElapsed: durationOf(rerank.ms),
              }),
          elapsed: durationOf(performance.now() - started),
        },
      };
    },
  };
}
