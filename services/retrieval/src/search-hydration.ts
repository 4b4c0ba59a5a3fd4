/**
 * The hydration stage of Search: every index candidate is re-read from the source of truth, and
 * dropped when the index has drifted from it (`drift`: gone, no longer searchable or visible) or
 * when the request's filters exclude it (`filtered`). The rows are read in batches: one query per
 * kind of row for the whole candidate list (per 500 ids), then one for the replies of the rounds.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { SearchResultSchema } from '@engram/contracts/retrieval';
import type { Principal } from '@engram/runtime';
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
import type { ItemKind, PointPayload, Visibility } from '@engram/vector-index';
import { firstReply } from './domain/points.js';
import {
  chunkMessage,
  documentMessage,
  memoryMessage,
  roundMessage,
  roundText,
  type SearchFilterPlan,
} from './search-api.js';

/** One merged candidate, before hydration. */
export interface Merged {
  readonly pointId: string;
  readonly payload: PointPayload;
  dense?: number;
  text?: number;
  denseRank?: number;
  lexicalRank?: number;
}

/** A candidate re-read from the source of truth. */
export interface Hydrated {
  readonly merged: Merged;
  readonly name: string;
  readonly kind: ItemKind;
  readonly text: string;
  readonly occurredAt?: number;
  readonly createdAt: number;
  readonly result: Pick<MessageInitShape<typeof SearchResultSchema>, 'item' | 'document'>;
}

export type Hydration = Hydrated | 'drift' | 'filtered';

/** How many messages after a round's user message are read to find its reply. */
const REPLY_WINDOW = 50;

/** The visibility of the principal, narrowed to the requested orgs when the request names some. */
export function visibilityOf(principal: Principal, filter: SearchFilterPlan): Visibility {
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

function inRange(t: number, range: SearchFilterPlan['occurTime']): boolean {
  if (range === undefined) return true;
  return (range.gte === undefined || t >= range.gte) && (range.lt === undefined || t < range.lt);
}

/** The source rows of one search's candidates, by id. */
interface SourceRows {
  readonly memories: ReadonlyMap<string, MemoryRecord>;
  readonly documents: ReadonlyMap<string, DocumentRecord>;
  readonly indexedChunks: ReadonlyMap<string, number>;
  readonly chunks: ReadonlyMap<string, ChunkRecord>;
  readonly sessions: ReadonlyMap<string, SessionRecord>;
  readonly messages: ReadonlyMap<string, MessageRecord>;
}

/** A round that passed every check but its reply, which the second read finds. */
interface RoundHead {
  readonly merged: Merged;
  readonly sessionId: string;
  readonly user: MessageRecord;
}

function isHead(h: Hydration | RoundHead): h is RoundHead {
  return typeof h === 'object' && 'user' in h;
}

/** Re-reads one search's candidates from the source of truth under the principal's visibility. */
export class Hydrator {
  readonly #memories: MemoryRepository;
  readonly #documents: DocumentRepository;
  readonly #sessions: SessionRepository;

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

  /** Every candidate's hydration, in the order of `candidates`. */
  async hydrate(candidates: readonly Merged[]): Promise<Hydration[]> {
    const rows = await this.#read(candidates.filter((m) => m.payload.tenantId === this.tenantId));
    const checked = candidates.map((m) => this.#check(m, rows));
    const heads = checked.filter(isHead);
    const windows = await this.#sessions.messageWindows(
      this.tenantId,
      heads.map((h) => ({
        sessionId: h.sessionId,
        fromSequence: h.user.sequence + 1,
        toSequence: h.user.sequence + REPLY_WINDOW,
      })),
    );
    const rounds = new Map(heads.map((h, i) => [h, this.#round(h, windows[i] ?? [])]));
    return checked.map((h) => (isHead(h) ? (rounds.get(h) ?? 'drift') : h));
  }

  /** The rows the candidates stand for, one query per kind of row (none for a kind without ids). */
  async #read(candidates: readonly Merged[]): Promise<SourceRows> {
    const ids = (kind: ItemKind, key: (p: PointPayload) => string | undefined) => [
      ...new Set(
        candidates.flatMap((m) => {
          const id = m.payload.kind === kind ? key(m.payload) : undefined;
          return id === undefined ? [] : [id];
        }),
      ),
    ];
    const documentIds = ids('CHUNK', (p) => p.documentId);
    const sessionIds = ids('ROUND', (p) => p.sessionId);
    const [memories, documents, indexedChunks, chunks, sessions, messages] = await Promise.all([
      this.#memories.getMany(
        this.tenantId,
        ids('MEMORY', (p) => p.sourceId),
      ),
      this.#documents.getMany(this.tenantId, documentIds),
      this.#documents.indexedChunkCounts(this.tenantId, documentIds),
      this.#documents.getChunks(
        this.tenantId,
        ids('CHUNK', (p) => (p.documentId === undefined ? undefined : p.sourceId)),
      ),
      this.#sessions.getMany(this.tenantId, sessionIds),
      this.#sessions.getMessages(
        this.tenantId,
        ids('ROUND', (p) => (p.sessionId === undefined ? undefined : p.sourceId)),
      ),
    ]);
    return { memories, documents, indexedChunks, chunks, sessions, messages };
  }

  /** A candidate checked against its rows: final, or a round head waiting for its reply. */
  #check(merged: Merged, rows: SourceRows): Hydration | RoundHead {
    const p = merged.payload;
    if (p.tenantId !== this.tenantId) return 'drift';
    switch (p.kind) {
      case 'MEMORY':
        return this.#memory(merged, rows.memories.get(p.sourceId));
      case 'CHUNK': {
        if (p.documentId === undefined) return 'drift';
        const doc = rows.documents.get(p.documentId);
        if (doc === undefined) return 'drift';
        const chunk = rows.chunks.get(p.sourceId);
        return this.#chunk(
          merged,
          doc,
          rows.indexedChunks.get(doc.id) ?? 0,
          chunk?.documentId === doc.id ? chunk : undefined,
        );
      }
      case 'ROUND': {
        if (p.sessionId === undefined) return 'drift';
        const user = rows.messages.get(p.sourceId);
        return this.#roundHead(
          merged,
          rows.sessions.get(p.sessionId),
          user?.sessionId === p.sessionId ? user : undefined,
        );
      }
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

  #roundHead(
    merged: Merged,
    session: SessionRecord | undefined,
    user: MessageRecord | undefined,
  ): Hydration | RoundHead {
    if (session === undefined) return 'drift';
    // Rounds are SELF items of the session's owner.
    if (!visible({ scope: 'SELF', ownerId: session.ownerId, orgId: '' }, this.who, this.filter.scopes)) {
      return 'drift';
    }
    if (user?.role !== 'USER') return 'drift';
    const f = this.filter;
    if (f.sessionIds.length > 0 && !f.sessionIds.includes(session.id)) return 'filtered';
    if (!inRange(user.occurredAt, f.occurTime)) return 'filtered';
    return { merged, sessionId: session.id, user };
  }

  #round({ merged, sessionId, user }: RoundHead, following: readonly MessageRecord[]): Hydrated {
    const reply = firstReply(following);
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
