/* eslint-disable @typescript-eslint/no-non-null-assertion -- typed-array kernels: every index is
   below `rows` or a list's length by construction, which `noUncheckedIndexedAccess` cannot see; a
   `?? 0` in these loops would turn a real bug into a silent zero score. */
import { WASM_PAGE, simdDots, simdDots8, wasmMemory, type Dots, type WasmMemory } from './embedded-dot.js';
import { ABSENT, UNKNOWN, selectMatching, type PayloadColumns } from './embedded-filter.js';
import type {
  IndexFilter,
  ItemKind,
  PointPayload,
  PointScope,
  ScrollPage,
  ScrolledPoint,
  Visibility,
} from './port.js';
import { STAGED_STATUS } from './port.js';

/**
 * One collection of the embedded index, in memory: the exact search engine behind
 * `createEmbeddedStore` (which keeps the durable copy in SQLite and rebuilds this at open).
 *
 * Layout: row slots. Dense vectors (normalized) sit contiguously in one WebAssembly memory, so
 * the SIMD kernel scores them in place; payload fields sit in typed columns (strings interned to
 * integer codes, the payload object is rebuilt only for results); sparse vectors sit in one pool
 * per collection, plus an inverted index term → (slot, weight) and per-term document frequencies.
 * A search selects the rows matching the filter first (column passes), scores only those rows,
 * then keeps the best `limit` with a bounded insertion list: exact within the filter, never a
 * post-filter.
 *
 * A lexical-first point (no dense vector yet, `payload.densePendingSince` set) has a slot like any
 * other, with `hasDense` 0: the dense kernel never scores it (its vector bytes are zeros, skipped,
 * never offered), while filters, sparse search, scroll and count see it as usual.
 *
 * Slots are append-only: replacing or deleting a point kills its slot (tenant code ABSENT, so no
 * filter selects it and its postings are skipped); {@link CollectionState.compact} rebuilds
 * everything once dead slots reach a quarter of the live ones.
 */

/** A point as this engine holds it: vectors already validated, the dense one normalized. */
export interface StoredPoint {
  readonly id: string;
  /**
   * Normalized; or the raw little-endian float32 bytes of a normalized vector (loading). Absent
   * while the point waits for its dense vector (`payload.densePendingSince` is then set).
   */
  readonly dense: Float32Array | Uint8Array | undefined;
  /** Strictly increasing term ids. */
  readonly sparseIndices: Uint32Array;
  /** Non-zero weights, one per term id. */
  readonly sparseValues: Float32Array;
  readonly payload: PointPayload;
}

/** A search hit: the row's id, score and payload (and its dense vector, when asked and present). */
export interface Hit {
  readonly id: string;
  readonly score: number;
  readonly payload: PointPayload;
}

/** A growable list of slots. */
interface SlotList {
  slots: Int32Array;
  length: number;
}

function push(list: SlotList, slot: number): void {
  if (list.length === list.slots.length) {
    const slots = new Int32Array(list.length * 2);
    slots.set(list.slots);
    list.slots = slots;
  }
  list.slots[list.length++] = slot;
}

interface Postings {
  slots: Int32Array;
  weights: Float32Array;
  length: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const GROWTH = 1.5;
const MIN_CAPACITY = 64;
const COMPACT_MIN_DEAD = 1024;

const PLATFORM_KEY = 3;

const align16 = (n: number) => Math.ceil(n / 16) * 16;

/** Keeps the best `limit` (score descending, then id ascending) of the rows offered to it. */
class TopK {
  readonly scores: Float64Array;
  readonly slots: Int32Array;
  count = 0;

  constructor(
    readonly limit: number,
    private readonly ids: readonly string[],
  ) {
    this.scores = new Float64Array(limit);
    this.slots = new Int32Array(limit);
  }

  private before(score: number, slot: number, than: number): boolean {
    const other = this.scores[than]!;
    return score > other || (score === other && this.ids[slot]! < this.ids[this.slots[than]!]!);
  }

  offer(score: number, slot: number): void {
    let at = this.count;
    if (at === this.limit) {
      if (!this.before(score, slot, at - 1)) return;
      at--;
    } else {
      this.count++;
    }
    while (at > 0 && this.before(score, slot, at - 1)) {
      this.scores[at] = this.scores[at - 1]!;
      this.slots[at] = this.slots[at - 1]!;
      at--;
    }
    this.scores[at] = score;
    this.slots[at] = slot;
  }
}

/** The in-memory state of one collection. Synchronous and single-threaded by design. */
export class CollectionState implements PayloadColumns {
  private capacity = 0;
  /** Slots in use, live or dead. */
  rows = 0;
  private live = 0;
  /** Live rows without a dense vector (lexical-first points). */
  private livePending = 0;
  /** Live rows with at least one term: Qdrant's N in the IDF. */
  private liveWithTerms = 0;

  // Dense side: [vectors | query | matches (i32) | scores (f32)] in one WebAssembly memory.
  private readonly memory: WasmMemory;
  private readonly dots: Dots | undefined;
  /** float32 rows (unquantized); empty when {@link quantized}. */
  private vectors = new Float32Array(0);
  /** int8 rows (quantized); empty otherwise. */
  private codes = new Int8Array(0);
  /** Quantized: row d ≈ codes[d] · scale (per row, max |x| / 127). */
  private scale = new Float32Array(0);
  private vectorBytes = new Uint8Array(0);
  private queryOffset = 0;
  private query = new Float32Array(0);
  private matchesOffset = 0;
  private matches = new Int32Array(0);
  private scoresOffset = 0;
  private scores32 = new Float32Array(0);

  // Identity and interned strings.
  private ids: string[] = [];
  private readonly slotOf = new Map<string, number>();
  private readonly dictionary = new Map<string, number>();
  private readonly strings: string[] = [];

  // Sparse side: each row's terms and weights in one pool, plus the inverted index.
  private termPool = new Uint32Array(0);
  private weightPool = new Float32Array(0);
  private poolUsed = 0;
  private sparseStart = new Int32Array(0);
  private sparseLength = new Int32Array(0);
  private postings = new Map<number, Postings>();
  private documentFrequency = new Map<number, number>();

  /**
   * The scope index: slots by who may see them — key `4·owner+1` for SELF rows, `4·org+2` for ORG
   * rows, {@link PLATFORM_KEY} for PLATFORM rows. Dead slots stay until compaction.
   */
  private readonly byScope = new Map<number, SlotList>();

  // Payload columns (PayloadColumns).
  tenant = new Int32Array(0);
  kind = new Int32Array(0);
  scope = new Int32Array(0);
  owner = new Int32Array(0);
  org = new Int32Array(0);
  status = new Int32Array(0);
  memoryType = new Int32Array(0);
  namespace = new Int32Array(0);
  session = new Int32Array(0);
  document = new Int32Array(0);
  source = new Int32Array(0);
  evergreen = new Int8Array(0);
  occurredAt = new Float64Array(0);
  createdAt = new Float64Array(0);
  expiresAt = new Float64Array(0);
  /** Stored and returned, never filtered on. NaN when absent. */
  private sourceUpdatedAt = new Float64Array(0);
  /** NaN on rows with a dense vector; the pending mark on the others. */
  private densePendingSince = new Float64Array(0);
  /** 1 when the row has a dense vector, 0 while it is pending (never scored by dense search). */
  private hasDense = new Uint8Array(0);

  // Sparse-search scratch: per-slot stamps and scores, reused (searches never interleave).
  private stamps = new Uint32Array(0);
  private scores = new Float64Array(0);
  private epoch = 0;

  /**
   * @param quantized hold the dense vectors as int8 with one float scale per row (a quarter of the
   *   memory; scores approximate, decision 0034) instead of float32.
   */
  constructor(
    readonly dims: number,
    expectedRows = 0,
    readonly quantized = false,
  ) {
    this.memory = wasmMemory(1);
    this.dots = dims % 8 === 0 ? (quantized ? simdDots8 : simdDots)(this.memory) : undefined;
    this.grow(Math.max(MIN_CAPACITY, expectedRows));
  }

  /** Live points. */
  get size(): number {
    return this.live;
  }

  code(value: string): number {
    return this.dictionary.get(value) ?? UNKNOWN;
  }

  private intern(value: string | undefined): number {
    if (value === undefined) return ABSENT;
    let code = this.dictionary.get(value);
    if (code === undefined) {
      code = this.strings.length;
      this.dictionary.set(value, code);
      this.strings.push(value);
    }
    return code;
  }

  private grow(capacity: number): void {
    const rows = this.rows;
    // Dense side: grow the memory in place (vectors start at 0 and keep their bytes), then lay
    // the scratch regions out after the new capacity.
    const vectorBytes = capacity * this.dims * (this.quantized ? 1 : 4);
    const queryOffset = align16(vectorBytes);
    const matchesOffset = align16(queryOffset + this.dims * 4);
    const scoresOffset = matchesOffset + capacity * 4;
    const pages = Math.ceil((scoresOffset + capacity * 4) / WASM_PAGE);
    const current = this.memory.buffer.byteLength / WASM_PAGE;
    if (pages > current) this.memory.grow(pages - current);
    const buffer = this.memory.buffer;
    if (this.quantized) this.codes = new Int8Array(buffer, 0, capacity * this.dims);
    else this.vectors = new Float32Array(buffer, 0, capacity * this.dims);
    this.vectorBytes = new Uint8Array(buffer, 0, vectorBytes);
    this.queryOffset = queryOffset;
    this.query = new Float32Array(buffer, queryOffset, this.dims);
    this.matchesOffset = matchesOffset;
    this.matches = new Int32Array(buffer, matchesOffset, capacity);
    this.scoresOffset = scoresOffset;
    this.scores32 = new Float32Array(buffer, scoresOffset, capacity);

    const ints = (a: Int32Array, fill: number) => {
      const b = new Int32Array(capacity).fill(fill);
      b.set(a.subarray(0, rows));
      return b;
    };
    const times = (a: Float64Array) => {
      const b = new Float64Array(capacity).fill(NaN);
      b.set(a.subarray(0, rows));
      return b;
    };
    this.tenant = ints(this.tenant, ABSENT);
    this.kind = ints(this.kind, ABSENT);
    this.scope = ints(this.scope, ABSENT);
    this.owner = ints(this.owner, ABSENT);
    this.org = ints(this.org, ABSENT);
    this.status = ints(this.status, ABSENT);
    this.memoryType = ints(this.memoryType, ABSENT);
    this.namespace = ints(this.namespace, ABSENT);
    this.session = ints(this.session, ABSENT);
    this.document = ints(this.document, ABSENT);
    this.source = ints(this.source, ABSENT);
    const evergreen = new Int8Array(capacity).fill(-1);
    evergreen.set(this.evergreen.subarray(0, rows));
    this.evergreen = evergreen;
    this.occurredAt = times(this.occurredAt);
    this.createdAt = times(this.createdAt);
    this.expiresAt = times(this.expiresAt);
    this.sourceUpdatedAt = times(this.sourceUpdatedAt);
    this.densePendingSince = times(this.densePendingSince);
    if (this.quantized) {
      const scale = new Float32Array(capacity);
      scale.set(this.scale.subarray(0, rows));
      this.scale = scale;
    }
    const hasDense = new Uint8Array(capacity);
    hasDense.set(this.hasDense.subarray(0, rows));
    this.hasDense = hasDense;
    this.sparseStart = ints(this.sparseStart, 0);
    this.sparseLength = ints(this.sparseLength, 0);
    this.stamps = new Uint32Array(capacity);
    this.scores = new Float64Array(capacity);
    this.epoch = 0;
    this.capacity = capacity;
  }

  private reservePool(extra: number): void {
    if (this.poolUsed + extra <= this.termPool.length) return;
    const size = Math.max(1024, Math.ceil((this.poolUsed + extra) * GROWTH));
    const terms = new Uint32Array(size);
    terms.set(this.termPool.subarray(0, this.poolUsed));
    const weights = new Float32Array(size);
    weights.set(this.weightPool.subarray(0, this.poolUsed));
    this.termPool = terms;
    this.weightPool = weights;
  }

  /** Inserts or replaces points (by id). Compacts afterwards when dead rows pile up. */
  upsert(points: Iterable<StoredPoint>): void {
    for (const point of points) {
      const slot = this.append(point);
      this.index(slot);
    }
    this.compactIfWorthIt();
  }

  /**
   * Adds many points to an empty state (opening, compaction): rows first, then the inverted
   * index in one pass with exactly sized posting lists.
   */
  load(points: Iterable<StoredPoint>): void {
    for (const point of points) this.append(point);
    const counts = new Map<number, number>();
    const terms = this.termPool;
    for (let slot = 0; slot < this.rows; slot++) {
      if (this.tenant[slot] === ABSENT) continue;
      const end = this.sparseStart[slot]! + this.sparseLength[slot]!;
      for (let at = this.sparseStart[slot]!; at < end; at++)
        counts.set(terms[at]!, (counts.get(terms[at]!) ?? 0) + 1);
    }
    this.postings = new Map();
    for (const [term, n] of counts)
      this.postings.set(term, { slots: new Int32Array(n), weights: new Float32Array(n), length: 0 });
    this.documentFrequency = counts;
    for (let slot = 0; slot < this.rows; slot++) {
      if (this.tenant[slot] === ABSENT) continue;
      const end = this.sparseStart[slot]! + this.sparseLength[slot]!;
      for (let at = this.sparseStart[slot]!; at < end; at++) {
        const list = this.postings.get(terms[at]!)!;
        list.slots[list.length] = slot;
        list.weights[list.length++] = this.weightPool[at]!;
      }
    }
  }

  /** Removes points by id; returns how many existed. */
  delete(ids: Iterable<string>): number {
    let removed = 0;
    for (const id of ids) if (this.kill(id)) removed++;
    this.compactIfWorthIt();
    return removed;
  }

  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Sets the payload status of live points by id (their filters see it at once). */
  setStatus(ids: Iterable<string>, status: string): void {
    const code = this.intern(status);
    for (const id of ids) {
      const slot = this.slotOf.get(id);
      if (slot !== undefined) this.status[slot] = code;
    }
  }

  /** Writes the row (not yet in the inverted index); returns its slot. */
  private append(point: StoredPoint): number {
    this.kill(point.id);
    if (this.rows === this.capacity) this.grow(Math.ceil(this.capacity * GROWTH));
    const slot = this.rows++;
    this.live++;
    if (point.dense === undefined) {
      // Zeros, not left-overs of a grown memory; never scored (hasDense 0).
      this.vectorBytes.fill(
        0,
        slot * this.dims * (this.quantized ? 1 : 4),
        (slot + 1) * this.dims * (this.quantized ? 1 : 4),
      );
      this.hasDense[slot] = 0;
      this.livePending++;
    } else if (this.quantized) {
      this.quantize(slot, point.dense);
      this.hasDense[slot] = 1;
    } else {
      if (point.dense instanceof Float32Array) this.vectors.set(point.dense, slot * this.dims);
      else this.vectorBytes.set(point.dense, slot * this.dims * 4);
      this.hasDense[slot] = 1;
    }
    const p = point.payload;
    this.ids[slot] = point.id;
    this.slotOf.set(point.id, slot);
    this.tenant[slot] = this.intern(p.tenantId);
    this.kind[slot] = this.intern(p.kind);
    this.scope[slot] = this.intern(p.scope);
    const owner = this.intern(p.ownerId);
    const org = this.intern(p.orgId);
    this.owner[slot] = owner;
    this.org[slot] = org;
    this.status[slot] = this.intern(p.status);
    this.memoryType[slot] = this.intern(p.memoryType);
    this.namespace[slot] = this.intern(p.namespace);
    this.session[slot] = this.intern(p.sessionId);
    this.document[slot] = this.intern(p.documentId);
    this.source[slot] = this.intern(p.sourceId);
    this.evergreen[slot] = p.evergreen === undefined ? -1 : p.evergreen ? 1 : 0;
    this.occurredAt[slot] = p.occurredAt ?? NaN;
    this.createdAt[slot] = p.createdAt;
    this.expiresAt[slot] = p.expiresAt ?? NaN;
    this.sourceUpdatedAt[slot] = p.sourceUpdatedAt ?? NaN;
    this.densePendingSince[slot] = point.dense === undefined ? (p.densePendingSince ?? NaN) : NaN;
    const key = p.scope === 'SELF' ? 4 * owner + 1 : p.scope === 'ORG' ? 4 * org + 2 : PLATFORM_KEY;
    let visible = this.byScope.get(key);
    if (visible === undefined) {
      visible = { slots: new Int32Array(8), length: 0 };
      this.byScope.set(key, visible);
    }
    push(visible, slot);
    const n = point.sparseIndices.length;
    this.reservePool(n);
    this.termPool.set(point.sparseIndices, this.poolUsed);
    this.weightPool.set(point.sparseValues, this.poolUsed);
    this.sparseStart[slot] = this.poolUsed;
    this.sparseLength[slot] = n;
    this.poolUsed += n;
    if (n > 0) this.liveWithTerms++;
    return slot;
  }

  /** Adds a row's terms to the inverted index and the document frequencies. */
  private index(slot: number): void {
    const end = this.sparseStart[slot]! + this.sparseLength[slot]!;
    for (let at = this.sparseStart[slot]!; at < end; at++) {
      const term = this.termPool[at]!;
      this.documentFrequency.set(term, (this.documentFrequency.get(term) ?? 0) + 1);
      let list = this.postings.get(term);
      if (list === undefined) {
        list = { slots: new Int32Array(4), weights: new Float32Array(4), length: 0 };
        this.postings.set(term, list);
      } else if (list.length === list.slots.length) {
        const slots = new Int32Array(list.length * 2);
        slots.set(list.slots);
        const weights = new Float32Array(list.length * 2);
        weights.set(list.weights);
        list.slots = slots;
        list.weights = weights;
      }
      list.slots[list.length] = slot;
      list.weights[list.length++] = this.weightPool[at]!;
    }
  }

  private kill(id: string): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    this.slotOf.delete(id);
    this.live--;
    if (this.hasDense[slot] === 0) this.livePending--;
    if (this.sparseLength[slot]! > 0) this.liveWithTerms--;
    this.tenant[slot] = ABSENT;
    const end = this.sparseStart[slot]! + this.sparseLength[slot]!;
    for (let at = this.sparseStart[slot]!; at < end; at++) {
      const term = this.termPool[at]!;
      const n = (this.documentFrequency.get(term) ?? 1) - 1;
      if (n === 0) this.documentFrequency.delete(term);
      else this.documentFrequency.set(term, n);
    }
    return true;
  }

  private compactIfWorthIt(): void {
    const dead = this.rows - this.live;
    if (dead >= COMPACT_MIN_DEAD && dead * 4 >= this.live) this.compact();
  }

  /** Rebuilds the state without its dead rows (new slots, pools, postings and dictionary). */
  compact(): void {
    const next = new CollectionState(this.dims, Math.ceil(this.live * 1.25), this.quantized);
    next.load(this.livePoints());
    // Adopt the rebuilt state wholesale (same class, same invariants).
    Object.assign(this, next);
  }

  private *livePoints(): Generator<StoredPoint> {
    for (let slot = 0; slot < this.rows; slot++) if (this.tenant[slot] !== ABSENT) yield this.pointAt(slot);
  }

  private pointAt(slot: number): StoredPoint {
    const start = this.sparseStart[slot]!;
    const end = start + this.sparseLength[slot]!;
    return {
      id: this.ids[slot]!,
      dense: this.denseAt(slot),
      sparseIndices: this.termPool.slice(start, end),
      sparseValues: this.weightPool.slice(start, end),
      payload: this.payloadAt(slot),
    };
  }

  /**
   * Writes a normalized vector as int8 codes with the row's scale max |x| / 127 (symmetric, per
   * row: no training, no drift as points come and go). Re-quantizing a dequantized row gives the
   * same codes, so compaction loses nothing more.
   */
  private quantize(slot: number, dense: Float32Array | Uint8Array): void {
    // Loading hands over SQLite's bytes, which need not be 4-byte aligned: copy them first.
    const v = dense instanceof Float32Array ? dense : new Float32Array(new Uint8Array(dense).buffer);
    let max = 0;
    for (let d = 0; d < this.dims; d++) max = Math.max(max, Math.abs(v[d]!));
    const scale = max / 127;
    const base = slot * this.dims;
    for (let d = 0; d < this.dims; d++) this.codes[base + d] = scale === 0 ? 0 : Math.round(v[d]! / scale);
    this.scale[slot] = scale;
  }

  /** A copy of the row's (normalized; quantized: dequantized) dense vector; undefined while pending. */
  private denseAt(slot: number): Float32Array | undefined {
    if (this.hasDense[slot] !== 1) return undefined;
    if (!this.quantized) return this.vectors.slice(slot * this.dims, (slot + 1) * this.dims);
    const out = new Float32Array(this.dims);
    const base = slot * this.dims;
    const scale = this.scale[slot]!;
    for (let d = 0; d < this.dims; d++) out[d] = this.codes[base + d]! * scale;
    return out;
  }

  /** The payload of a row, rebuilt from the columns. */
  payloadAt(slot: number): PointPayload {
    const s = this.strings;
    const text = (column: Int32Array) => (column[slot] === ABSENT ? undefined : s[column[slot]!]);
    const p: Mutable<PointPayload> = {
      tenantId: s[this.tenant[slot]!]!,
      kind: s[this.kind[slot]!] as ItemKind,
      sourceId: s[this.source[slot]!]!,
      scope: s[this.scope[slot]!] as PointScope,
      ownerId: s[this.owner[slot]!]!,
      orgId: s[this.org[slot]!]!,
      status: s[this.status[slot]!]!,
      createdAt: this.createdAt[slot]!,
    };
    const memoryType = text(this.memoryType);
    if (memoryType !== undefined) p.memoryType = memoryType;
    const namespace = text(this.namespace);
    if (namespace !== undefined) p.namespace = namespace;
    if (this.evergreen[slot] !== -1) p.evergreen = this.evergreen[slot] === 1;
    const sessionId = text(this.session);
    if (sessionId !== undefined) p.sessionId = sessionId;
    const documentId = text(this.document);
    if (documentId !== undefined) p.documentId = documentId;
    if (!Number.isNaN(this.occurredAt[slot])) p.occurredAt = this.occurredAt[slot]!;
    if (!Number.isNaN(this.expiresAt[slot])) p.expiresAt = this.expiresAt[slot]!;
    if (!Number.isNaN(this.sourceUpdatedAt[slot])) p.sourceUpdatedAt = this.sourceUpdatedAt[slot]!;
    if (!Number.isNaN(this.densePendingSince[slot])) p.densePendingSince = this.densePendingSince[slot]!;
    return p;
  }

  visibleSlots(viewer: Visibility, out: Int32Array): number {
    let n = 0;
    const add = (key: number) => {
      const list = this.byScope.get(key);
      if (list === undefined) return;
      out.set(list.slots.subarray(0, list.length), n);
      n += list.length;
    };
    const subject = this.code(viewer.subject);
    if (subject !== UNKNOWN) add(4 * subject + 1);
    for (const org of new Set(viewer.orgIds)) {
      const code = this.code(org);
      if (code !== UNKNOWN) add(4 * code + 2);
    }
    if (viewer.platform) add(PLATFORM_KEY);
    return n;
  }

  private select(filter: IndexFilter): number {
    return selectMatching(this, filter, this.matches);
  }

  /** Ids of the live points matching `filter`. */
  idsMatching(filter: IndexFilter): string[] {
    const n = this.select(filter);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(this.ids[this.matches[i]!]!);
    return ids;
  }

  count(filter?: IndexFilter): number {
    return filter === undefined ? this.live : this.select(filter);
  }

  /**
   * The first `limit` rows matching `filter` with an id above `after`, in ascending id order, and
   * the last one's id as `next` when more follow. Keeps the `limit + 1` smallest ids in a
   * {@link TopK} with equal scores (ties go to the smaller id): one pass over the matching rows
   * per page, no sort of the whole set.
   */
  scroll(filter: IndexFilter, limit: number, after: string | undefined): ScrollPage {
    const n = this.select(filter);
    const top = new TopK(Math.min(limit + 1, n), this.ids);
    const ids = this.ids;
    const matches = this.matches;
    for (let i = 0; i < n; i++) {
      const slot = matches[i]!;
      if (after === undefined || ids[slot]! > after) top.offer(0, slot);
    }
    const points: ScrolledPoint[] = [];
    for (let i = 0; i < Math.min(top.count, limit); i++) {
      const slot = top.slots[i]!;
      points.push({ id: ids[slot]!, payload: this.payloadAt(slot) });
    }
    return top.count > limit ? { points, next: points[points.length - 1]!.id } : { points };
  }

  /** A live point by id, with copies of its (normalized) dense and its sparse vector. */
  get(id: string): StoredPoint | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined ? undefined : this.pointAt(slot);
  }

  /** A copy of a live point's dense vector (dequantized); undefined when absent or still pending. */
  denseOf(id: string): Float32Array | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined ? undefined : this.denseAt(slot);
  }

  /** The hits of a search. */
  private hits(top: TopK): Hit[] {
    const hits: Hit[] = [];
    for (let i = 0; i < top.count; i++) {
      const slot = top.slots[i]!;
      hits.push({ id: this.ids[slot]!, score: top.scores[i]!, payload: this.payloadAt(slot) });
    }
    return hits;
  }

  /**
   * Up to `limit` live rows of any tenant without a dense vector, of `kinds` (any when empty), by
   * ascending pending mark, ties by id: one pass over the rows, a bounded top-k.
   */
  pendingDense(limit: number, kinds: readonly string[]): ScrolledPoint[] {
    if (this.livePending === 0 || limit <= 0) return [];
    const codes = new Set(kinds.map((k) => this.code(k)));
    const staged = this.code(STAGED_STATUS);
    const top = new TopK(Math.min(limit, this.livePending), this.ids);
    const since = this.densePendingSince;
    for (let slot = 0; slot < this.rows; slot++) {
      if (this.hasDense[slot] === 1 || this.tenant[slot] === ABSENT) continue;
      if (codes.size > 0 && !codes.has(this.kind[slot]!)) continue;
      if (this.status[slot] === staged) continue;
      // TopK keeps the highest scores: the negated mark puts the oldest first.
      top.offer(-since[slot]!, slot);
    }
    const points: ScrolledPoint[] = [];
    for (let i = 0; i < top.count; i++) {
      const slot = top.slots[i]!;
      points.push({ id: this.ids[slot]!, payload: this.payloadAt(slot) });
    }
    return points;
  }

  /** Live rows without a dense vector, of `tenantId` (any when undefined) and `kinds` (any when empty). */
  countPending(tenantId: string | undefined, kinds: readonly string[]): number {
    const staged = this.code(STAGED_STATUS);
    if (this.livePending === 0) return 0;
    if (tenantId === undefined && kinds.length === 0 && staged === UNKNOWN) return this.livePending;
    const tenant = tenantId === undefined ? undefined : this.code(tenantId);
    if (tenant === UNKNOWN) return 0;
    const codes = new Set(kinds.map((k) => this.code(k)));
    let n = 0;
    for (let slot = 0; slot < this.rows; slot++) {
      if (this.hasDense[slot] === 1 || this.tenant[slot] === ABSENT) continue;
      if (this.status[slot] === staged) continue;
      if (tenant !== undefined && this.tenant[slot] !== tenant) continue;
      if (codes.size > 0 && !codes.has(this.kind[slot]!)) continue;
      n += 1;
    }
    return n;
  }

  /**
   * The `limit` rows matching `filter` with the highest dot product with `query` (normalized).
   * Rows without a dense vector are dropped from the matches before scoring.
   */
  searchDense(query: Float32Array, filter: IndexFilter, limit: number): Hit[] {
    if (limit <= 0) return [];
    let n = this.select(filter);
    if (this.livePending > 0) {
      const matches = this.matches;
      const hasDense = this.hasDense;
      let m = 0;
      for (let i = 0; i < n; i++) if (hasDense[matches[i]!] === 1) matches[m++] = matches[i]!;
      n = m;
    }
    const top = new TopK(Math.min(limit, n), this.ids);
    if (top.limit === 0) return [];
    const matches = this.matches;
    if (this.dots !== undefined) {
      this.query.set(query);
      this.dots(this.queryOffset, this.matchesOffset, n, this.dims, this.scoresOffset);
      const scores = this.scores32;
      if (this.quantized) {
        const scale = this.scale;
        for (let i = 0; i < n; i++) top.offer(Math.fround(scores[i]! * scale[matches[i]!]!), matches[i]!);
      } else {
        for (let i = 0; i < n; i++) top.offer(scores[i]!, matches[i]!);
      }
      return this.hits(top);
    }
    const dims = this.dims;
    const v = this.quantized ? this.codes : this.vectors;
    for (let i = 0; i < n; i++) {
      const base = matches[i]! * dims;
      let score = 0;
      for (let d = 0; d < dims; d++) score += query[d]! * v[base + d]!;
      if (this.quantized) score *= this.scale[matches[i]!]!;
      top.offer(Math.fround(score), matches[i]!);
    }
    return this.hits(top);
  }

  /**
   * IDF as Qdrant's sparse `idf` modifier computes it: ln(1 + (N − n + 0.5) / (n + 0.5)), N the
   * points of the whole collection (every tenant) with a non-empty sparse vector, n those holding
   * the term.
   */
  idf(term: number): number {
    const n = this.documentFrequency.get(term) ?? 0;
    return Math.log(1 + (this.liveWithTerms - n + 0.5) / (n + 0.5));
  }

  /**
   * The `limit` rows matching `filter` sharing at least one term with the query, by
   * Σ query weight · idf(term) · row weight. Walks the query terms' postings, or — when the filter
   * leaves fewer rows than the postings are long — looks the terms up in each matching row.
   */
  searchSparse(indices: Uint32Array, values: Float32Array, filter: IndexFilter, limit: number): Hit[] {
    if (limit <= 0 || indices.length === 0) return [];
    const n = this.select(filter);
    if (n === 0) return [];
    const factors = new Float64Array(indices.length);
    let postingsLength = 0;
    for (let q = 0; q < indices.length; q++) {
      factors[q] = values[q]! * this.idf(indices[q]!);
      postingsLength += this.postings.get(indices[q]!)?.length ?? 0;
    }
    const top = new TopK(Math.min(limit, n), this.ids);
    const matches = this.matches;
    if (n * indices.length * 4 < postingsLength) {
      for (let i = 0; i < n; i++) {
        const slot = matches[i]!;
        const start = this.sparseStart[slot]!;
        const end = start + this.sparseLength[slot]!;
        let score = 0;
        let overlap = false;
        for (let q = 0; q < indices.length; q++) {
          const at = indexOf(this.termPool, start, end, indices[q]!);
          if (at < 0) continue;
          overlap = true;
          score += factors[q]! * this.weightPool[at]!;
        }
        if (overlap) top.offer(score, slot);
      }
      return this.hits(top);
    }
    // Stamp the matching rows "matching" (a fresh epoch), then accumulate postings into rows so
    // stamped, restamping them "touched" (the next epoch) on first contact.
    if (this.epoch >= 0xfffffff0) {
      this.stamps.fill(0);
      this.epoch = 0;
    }
    const matching = ++this.epoch;
    const touched = ++this.epoch;
    const stamps = this.stamps;
    const scores = this.scores;
    for (let i = 0; i < n; i++) stamps[matches[i]!] = matching;
    let touchedCount = 0;
    for (let q = 0; q < indices.length; q++) {
      const list = this.postings.get(indices[q]!);
      if (list === undefined) continue;
      const factor = factors[q]!;
      for (let e = 0; e < list.length; e++) {
        const slot = list.slots[e]!;
        const stamp = stamps[slot];
        if (stamp === matching) {
          stamps[slot] = touched;
          scores[slot] = factor * list.weights[e]!;
          matches[touchedCount++] = slot; // the match list is spent: reuse it for touched rows
        } else if (stamp === touched) {
          scores[slot] = scores[slot]! + factor * list.weights[e]!;
        }
      }
    }
    for (let i = 0; i < touchedCount; i++) top.offer(scores[matches[i]!]!, matches[i]!);
    return this.hits(top);
  }
}

/** Binary search for `value` in the strictly increasing `sorted[start..end)`; -1 when absent. */
function indexOf(sorted: Uint32Array, start: number, end: number, value: number): number {
  let lo = start;
  let hi = end - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = sorted[mid]!;
    if (at === value) return mid;
    if (at < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
