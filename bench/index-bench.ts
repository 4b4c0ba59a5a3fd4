/**
 * The index benchmark of issue #4: embedding throughput of the local model, and insert throughput
 * plus search latency of both vector-index adapters at several sizes, with the Qdrant transport
 * comparison (the adapter's own transport versus `@qdrant/js-client-rest` 1.18).
 *
 *   npm run bench:index -- [--out bench/out/index.json] [--sizes 10000,100000] [--queries 200]
 *     [--adapters embedded,qdrant] [--texts 200] [--skip-embeddings] [--dims 512]
 *     [--quantization none|int8] [--child-timeout-min 20]
 *
 * Every phase runs in its own child process (so each peak RSS belongs to that phase alone): the
 * embedder; for each adapter and size a "fill" child (insert the points in batches of 256, wait for
 * Qdrant's optimizer) and then a "query" child that opens the index as a serving process would and
 * runs the queries. The parent owns every resource (temporary directories, the Qdrant server) and
 * releases it at the end, on failure and on SIGINT/SIGTERM. Loopback only.
 *
 * The data is synthetic and deterministic (seeded PRNG): clustered 512-dim unit vectors, BM25 sparse
 * vectors from `encodeDocument` over mixed zh/en text drawn from a Zipf-like vocabulary, one tenant
 * with 10 owners (SELF) and every 50th point an ORG point of one of 5 orgs. The searching principal
 * u0 (member of o0) therefore sees N/10 SELF + N/250 ORG points; 30 of its points carry the
 * session `rare` (the selective filter).
 *
 * Timings are medians and percentiles (nearest rank) of individually timed calls, the query types
 * interleaved in rounds of 20 after 20 warm-ups each, so that background load hits them alike.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { QdrantClient, type Schemas } from '@qdrant/js-client-rest';
import { encodeDocument, encodeQuery } from '@engram/lexical';
import { choices, percentile, seededRandom, startQdrant } from '@engram/testing';
import {
  createEmbeddedStore,
  createQdrantStore,
  pointId,
  type IndexFilter,
  type ItemKind,
  type Point,
  type SparseVector,
  toQdrantFilter,
  type VectorStore,
} from '@engram/vector-index';
import { gitCommit, loadAverage, machine, peakRssMib, processRss, qdrantPid } from './lib/machine.js';

const SCRIPT = fileURLToPath(import.meta.url);
const WORKSPACE = resolve(dirname(SCRIPT), '..');

/**
 * The shape of the run, set from the command line (`--dims`, `--quantization`) in the parent and
 * from the task in every child, before any point or query is made.
 */
const shape: { dims: number; quantization: 'none' | 'int8' } = { dims: 512, quantization: 'none' };
const COLLECTION = 'bench';
const BATCH = 256;
const LIMIT = 10;
const WARMUP = 20;
const ROUND = 20;
const OWNERS = 10;
const ORGS = 5;
const CLUSTERS = 200;
const RARE_SESSION = 'rare';
const RARE_POINTS = 30;
const TENANT = 't0';

type Adapter = 'embedded' | 'qdrant';
type QueryType = 'dense' | 'sparse' | 'selective';
const QUERY_TYPES: readonly QueryType[] = ['dense', 'sparse', 'selective'];

/** The principal of every query: owner u0, member of org o0. */
const VISIBLE: IndexFilter = {
  tenantId: TENANT,
  visibleTo: { subject: 'u0', orgIds: ['o0'], platform: false },
};
/** The same principal, narrowed to one session of 30 points. */
const SELECTIVE: IndexFilter = { ...VISIBLE, sessionIds: [RARE_SESSION] };

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

interface Percentiles {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentiles of a list of milliseconds. */
function percentiles(ms: readonly number[]): Percentiles {
  const sorted = [...ms].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50: round3(percentile(sorted, 50)),
    p95: round3(percentile(sorted, 95)),
    p99: round3(percentile(sorted, 99)),
    max: round3(sorted.at(-1) ?? Number.NaN),
    mean: round3(sum / sorted.length),
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function mib(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}

// ---------------------------------------------------------------------------------------------
// The synthetic data (deterministic: the same seed gives the same points in every process)
// ---------------------------------------------------------------------------------------------

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
}

function normalized(v: Float32Array): Float32Array {
  let norm = 0;
  for (let d = 0; d < v.length; d++) norm += v[d]! * v[d]!;
  norm = Math.sqrt(norm);
  for (let d = 0; d < v.length; d++) v[d]! /= norm;
  return v;
}

function randomUnit(random: () => number): Float32Array {
  const v = new Float32Array(shape.dims);
  for (let d = 0; d < shape.dims; d++) v[d] = gaussian(random);
  return normalized(v);
}

/**
 * Clustered vectors that look a little like sentence embeddings: a shared direction (embeddings of
 * one model are anisotropic), one of {@link CLUSTERS} topic centres, and per-point noise. Cosine
 * between two points of a topic is ≈ 0.5, between topics ≈ 0.2.
 */
class VectorSpace {
  private readonly common: Float32Array;
  private readonly centres: Float32Array[];

  constructor() {
    const random = seededRandom(1);
    this.common = randomUnit(random);
    this.centres = Array.from({ length: CLUSTERS }, () => randomUnit(random));
  }

  sample(random: () => number): Float32Array {
    const centre = this.centres[Math.floor(random() * CLUSTERS)]!;
    const v = new Float32Array(shape.dims);
    for (let d = 0; d < shape.dims; d++) {
      v[d] = 0.5 * this.common[d]! + 0.7 * centre[d]! + 0.035 * gaussian(random);
    }
    return normalized(v);
  }
}

const ZH_WORDS =
  '用户 喜欢 项目 会议 数据库 迁移 周报 预算 客户 需求 设计 测试 上线 服务器 延迟 模型 检索 记忆 ' +
  '文档 团队 经理 计划 下周 明天 今天 北京 上海 深圳 咖啡 午饭 健身 跑步 旅行 机票 酒店 孩子 学校 ' +
  '医生 体检 生日 礼物 电影 音乐 小说 历史 天气 下雨 周末 加班 工资 面试 简历 合同 发票 报销 会计 ' +
  '产品 版本 发布 故障 回滚 监控 告警 日志 索引 查询 缓存 队列 部署 容器 集群 备份 权限 账号 密码 ' +
  '邮件 电话 地址 偏好 过敏 素食 猫 狗 钢琴 摄影 编程 英语 日语 考试 论文 导师 实验 数据 分析 报告';
const EN_WORDS =
  'user prefers project meeting database migration weekly report budget customer requirement design ' +
  'test release server latency model search memory document team manager plan next week tomorrow today ' +
  'coffee lunch gym running travel flight hotel kids school doctor checkup birthday gift movie music novel ' +
  'history weather rain weekend overtime salary interview resume contract invoice expense product version ' +
  'deploy incident rollback monitoring alert logs index query cache queue container cluster backup access ' +
  'account password email phone address allergy vegetarian cat dog piano photography python typescript ' +
  'english japanese exam paper advisor experiment data analysis kubernetes postgres redis grafana';
const ZH_CHARS =
  '的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面' +
  '而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性' +
  '好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第' +
  '向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管' +
  '特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处' +
  '队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单';
const SYLLABLES = [
  'ka',
  'lo',
  'ren',
  'mi',
  'sa',
  'tor',
  'vel',
  'din',
  'que',
  'bra',
  'po',
  'lin',
  'gar',
  'est',
  'ul',
  'mon',
  'ta',
  'ri',
  'fen',
  'dor',
  'sil',
  'ax',
  'ne',
  'cor',
  'pha',
  'zu',
  'ber',
  'ton',
  'wi',
  'hal',
];

/**
 * A mixed zh/en vocabulary, most frequent first: real words at the head, then pseudo-words (Chinese
 * character pairs and triples, Latin syllable strings) as the long tail of rare terms.
 */
class Vocabulary {
  readonly zh: string[];
  readonly en: string[];

  constructor(tail = 4000) {
    const random = seededRandom(3);
    const chars = Array.from(ZH_CHARS); // BMP characters only
    const { pick } = choices(random);
    this.zh = ZH_WORDS.split(' ');
    this.en = EN_WORDS.split(' ');
    for (let i = 0; i < tail; i++) {
      this.zh.push(Array.from({ length: 2 + Math.floor(random() * 2) }, () => pick(chars)).join(''));
      this.en.push(Array.from({ length: 2 + Math.floor(random() * 2) }, () => pick(SYLLABLES)).join(''));
    }
  }

  /** A word by Zipf's law (s = 1): rank r with probability ∝ 1/r. */
  word(random: () => number, zh: boolean): string {
    const list = zh ? this.zh : this.en;
    const rank = Math.min(list.length - 1, Math.floor(Math.exp(random() * Math.log(list.length + 1)) - 1));
    return list[rank]!;
  }

  /** A text of `words` words; `zhShare` of them Chinese (joined without spaces), the rest Latin. */
  text(random: () => number, words: number, zhShare: number): string {
    let text = '';
    let lastZh = false;
    for (let w = 0; w < words; w++) {
      const zh = random() < zhShare;
      const word = this.word(random, zh);
      text += w === 0 || (zh && lastZh) ? word : ` ${word}`;
      lastZh = zh;
    }
    return text;
  }
}

/** Per text: mostly Chinese, mostly English, or evenly mixed. */
function zhShare(random: () => number): number {
  const r = random();
  return r < 0.5 ? 0.85 : r < 0.8 ? 0.15 : 0.5;
}

const KIND_CYCLE: readonly ItemKind[] = ['MEMORY', 'MEMORY', 'ROUND', 'MEMORY', 'CHUNK'];
const MEMORY_TYPES = ['FACT', 'EPISODE', 'EVENT', 'FORESIGHT', 'SUMMARY'];

/** The number of points u0's SELF points skip between two `rare` ones. */
function rareStep(size: number): number {
  return Math.max(1, Math.floor(size / OWNERS / RARE_POINTS));
}

/**
 * Point i: owner u(i mod 10); every 50th (i mod 50 = 7) an ORG point of org o(⌊i/50⌋ mod 5);
 * 30 of u0's SELF points spread over the range carry the session `rare`.
 */
function makePoint(
  i: number,
  size: number,
  random: () => number,
  space: VectorSpace,
  vocab: Vocabulary,
): Point {
  const org = i % 50 === 7;
  const owner = i % OWNERS;
  const k = Math.floor(i / OWNERS);
  const step = rareStep(size);
  const rare = owner === 0 && k % step === 0 && k / step < RARE_POINTS;
  const kind = KIND_CYCLE[i % KIND_CYCLE.length]!;
  const sourceId = String(i);
  const long = random() < 0.4;
  const words = long ? 25 + Math.floor(random() * 46) : 6 + Math.floor(random() * 15);
  const text = vocab.text(random, words, zhShare(random));
  return {
    id: pointId(kind, sourceId),
    dense: space.sample(random),
    sparse: encodeDocument(text),
    payload: {
      tenantId: TENANT,
      kind,
      sourceId,
      scope: org ? 'ORG' : 'SELF',
      ownerId: `u${owner}`,
      orgId: org ? `o${Math.floor(i / 50) % ORGS}` : '',
      status: 'ACTIVE',
      ...(kind === 'MEMORY' ? { memoryType: MEMORY_TYPES[i % MEMORY_TYPES.length]! } : {}),
      ...(kind === 'CHUNK' ? { documentId: `d${Math.floor(i / 200)}` } : {}),
      sessionId: rare ? RARE_SESSION : `u${owner}-s${Math.floor(k / 40)}`,
      createdAt: 1_700_000_000_000 + i * 1000,
    },
  };
}

/** The points in batches of {@link BATCH}. */
function* pointBatches(size: number): Generator<Point[]> {
  const random = seededRandom(42);
  const space = new VectorSpace();
  const vocab = new Vocabulary();
  let batch: Point[] = [];
  for (let i = 0; i < size; i++) {
    batch.push(makePoint(i, size, random, space, vocab));
    if (batch.length === BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/** What the principal should see: N/10 SELF points of u0 plus the ORG points of o0. */
function expectedVisible(size: number): number {
  let n = 0;
  for (let i = 0; i < size; i++) {
    if (i % 50 === 7) n += Math.floor(i / 50) % ORGS === 0 ? 1 : 0;
    else if (i % OWNERS === 0) n += 1;
  }
  return n;
}

interface QuerySet {
  readonly dense: Float32Array[];
  readonly sparse: SparseVector[];
}

/** Dense queries near a topic centre; sparse queries of 2–6 words from the same vocabulary. */
function querySet(count: number): QuerySet {
  const random = seededRandom(7);
  const space = new VectorSpace();
  const vocab = new Vocabulary();
  const dense: Float32Array[] = [];
  const sparse: SparseVector[] = [];
  for (let q = 0; q < count; q++) {
    dense.push(space.sample(random));
    let s: SparseVector;
    do s = encodeQuery(vocab.text(random, 2 + Math.floor(random() * 5), zhShare(random)));
    while (s.indices.length === 0);
    sparse.push(s);
  }
  return { dense, sparse };
}

// ---------------------------------------------------------------------------------------------
// Child phases
// ---------------------------------------------------------------------------------------------

interface EmbedTask {
  readonly phase: 'embed';
  readonly texts: number;
}
interface IndexTask {
  /** `truth`: the exact (float) dense answers of the embedded index, for an int8 run's recall. */
  readonly phase: 'fill' | 'query' | 'truth';
  readonly adapter: Adapter;
  readonly size: number;
  readonly dims: number;
  /** Embedded only: how the fill and query phases hold the dense vectors in memory. */
  readonly quantization: 'none' | 'int8';
  /** Embedded int8 query phase: the truth phase's answers (JSON: ids per query). */
  readonly truthFile?: string;
  /** Embedded: the index directory. Qdrant: the REST URL. */
  readonly location: string;
  readonly queries: number;
  /** Query phase on Qdrant: also compare the transports. */
  readonly transport: boolean;
}
type Task = EmbedTask | IndexTask;

interface TextSetResult {
  readonly texts: number;
  readonly tokens: { readonly mean: number; readonly min: number; readonly max: number };
  readonly textsPerSecond: number;
  readonly ms: Percentiles;
}
interface EmbedResult {
  readonly model: string;
  readonly dimensions: number;
  /** Hash verification of the model files plus the ONNX session. */
  readonly loadMs: number;
  readonly short: TextSetResult;
  readonly long: TextSetResult;
  readonly peakRssMib: number;
}

interface FillResult {
  readonly points: number;
  /** Time spent generating the synthetic points (not part of the throughput). */
  readonly generateMs: number;
  /** Sum of the upsert calls (batches of 256, `wait: true`). */
  readonly upsertMs: number;
  readonly pointsPerSecond: number;
  readonly batchMs: Percentiles;
  /** Qdrant: from the last upsert until the collection is green (HNSW and sparse index built). */
  readonly optimizeMs?: number;
  readonly peakRssMib: number;
  readonly diskMib?: number;
}

interface TransportResult {
  readonly queries: number;
  readonly jsClientRest: Percentiles;
  readonly adapter: Percentiles;
  readonly sameAnswers: boolean;
}

interface QueryResult {
  readonly points: number;
  readonly visible: number;
  readonly selective: number;
  /** Open the store and answer a first count (the embedded adapter loads its mirror here). */
  readonly openMs: number;
  readonly latency: Record<QueryType, Percentiles>;
  /** Mean number of results per query type (the selective filter must still give 10). */
  readonly meanResults: Record<QueryType, number>;
  /** Qdrant: recall@10 of the dense visible query against Qdrant's exact search. */
  readonly denseRecallAt10?: number;
  readonly rssMib: number;
  readonly peakRssMib: number;
  readonly transport?: TransportResult;
}

async function runEmbed(task: EmbedTask): Promise<EmbedResult> {
  // Imported here, not at the top: the ONNX runtime alone would add ~250 MiB to every index phase's RSS.
  const { LocalEmbedder, LOCAL_MODEL_NAME } = await import('@engram/embeddings');
  const { AutoTokenizer } = await import('@huggingface/transformers');
  const embedder = new LocalEmbedder();
  try {
    const loadStart = performance.now();
    await embedder.load();
    const loadMs = performance.now() - loadStart;
    // The embedder has pointed transformers.js at the verified local model; this only reads the tokenizer.
    const tokenizer = await AutoTokenizer.from_pretrained(LOCAL_MODEL_NAME, {
      local_files_only: true,
    });
    const countTokens = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).length;
    const random = seededRandom(11);
    const vocab = new Vocabulary();
    /** Texts of at least `target` model tokens (without [CLS]/[SEP]), grown word by word. */
    const texts = (target: number) =>
      Array.from({ length: task.texts }, () => {
        const share = zhShare(random);
        let text = '';
        while (countTokens(text) < target) text = `${text} ${vocab.text(random, 1, share)}`.trim();
        return text;
      });
    const sets = { short: texts(10), long: texts(50) };
    for (const text of [...sets.short, ...sets.long].slice(0, WARMUP))
      await embedder.embed([text], 'document');
    const times: Record<'short' | 'long', number[]> = { short: [], long: [] };
    for (let start = 0; start < task.texts; start += ROUND) {
      for (const which of ['short', 'long'] as const) {
        for (const text of sets[which].slice(start, start + ROUND)) {
          const t = performance.now();
          // Short texts are what queries look like; without a query instruction both kinds cost the same.
          await embedder.embed([text], which === 'short' ? 'query' : 'document');
          times[which].push(performance.now() - t);
        }
      }
    }
    const summary = (which: 'short' | 'long'): TextSetResult => {
      const tokens = sets[which].map(countTokens);
      const totalMs = times[which].reduce((a, b) => a + b, 0);
      return {
        texts: times[which].length,
        tokens: {
          mean: round3(tokens.reduce((a, b) => a + b, 0) / tokens.length),
          min: Math.min(...tokens),
          max: Math.max(...tokens),
        },
        textsPerSecond: round3((times[which].length / totalMs) * 1000),
        ms: percentiles(times[which]),
      };
    };
    return {
      model: embedder.model,
      dimensions: embedder.dimensions,
      loadMs: round3(loadMs),
      short: summary('short'),
      long: summary('long'),
      peakRssMib: peakRssMib(),
    };
  } finally {
    await embedder.close();
  }
}

function openStore(task: IndexTask, exact = false): VectorStore {
  // The fill holds the index as the serving process would; only the truth phase reads float32.
  const quantization = task.phase === 'truth' ? 'none' : task.quantization;
  return task.adapter === 'embedded'
    ? createEmbeddedStore({ path: task.location, ...(quantization === 'int8' ? { quantization } : {}) })
    : createQdrantStore({ url: task.location, exact });
}

/** The exact top-10 ids of every dense query, from the embedded index held as float32. */
async function runTruth(task: IndexTask): Promise<string[][]> {
  const queries = querySet(task.queries);
  const store = openStore(task);
  try {
    const index = store.index(COLLECTION);
    const truth: string[][] = [];
    for (let q = 0; q < task.queries; q++)
      truth.push((await index.searchDense(queries.dense[q]!, VISIBLE, LIMIT)).map((p) => p.id));
    return truth;
  } finally {
    await store.close();
  }
}

/** Waits until Qdrant reports the collection green (optimizers done, indexes built). */
async function waitGreen(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${url}/collections/${COLLECTION}`, { signal: AbortSignal.timeout(10_000) });
    const info = (await response.json()) as { result?: { status?: string } };
    if (info.result?.status === 'green') return;
    if (Date.now() > deadline) throw new Error(`Qdrant collection not green after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function directoryMib(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return mib(bytes);
}

async function runFill(task: IndexTask): Promise<FillResult> {
  const store = openStore(task);
  try {
    const index = store.index(COLLECTION);
    await index.ensureCollection({ model: 'bench', dimensions: shape.dims });
    const batchMs: number[] = [];
    let generateMs = 0;
    let generated = performance.now();
    for (const batch of pointBatches(task.size)) {
      const start = performance.now();
      generateMs += start - generated;
      await index.upsert(batch, { wait: true });
      generated = performance.now();
      batchMs.push(generated - start);
    }
    let optimizeMs: number | undefined;
    if (task.adapter === 'qdrant') {
      const start = performance.now();
      await waitGreen(task.location, 10 * 60_000);
      optimizeMs = round3(performance.now() - start);
    }
    const count = await index.count();
    if (count !== task.size) throw new Error(`expected ${task.size} points, the index holds ${count}`);
    const upsertMs = batchMs.reduce((a, b) => a + b, 0);
    return {
      points: task.size,
      generateMs: round3(generateMs),
      upsertMs: round3(upsertMs),
      pointsPerSecond: round3((task.size / upsertMs) * 1000),
      batchMs: percentiles(batchMs),
      ...(optimizeMs !== undefined ? { optimizeMs } : {}),
      peakRssMib: peakRssMib(),
      ...(task.adapter === 'embedded' ? { diskMib: directoryMib(task.location) } : {}),
    };
  } finally {
    await store.close();
  }
}

async function runQuery(task: IndexTask): Promise<QueryResult> {
  const queries = querySet(task.queries);
  const openStart = performance.now();
  const store = openStore(task);
  const exactStore = task.adapter === 'qdrant' ? openStore(task, true) : undefined;
  try {
    const index = store.index(COLLECTION);
    const points = await index.count();
    const openMs = round3(performance.now() - openStart);
    const visible = await index.count(VISIBLE);
    const selective = await index.count(SELECTIVE);
    if (points !== task.size || visible !== expectedVisible(task.size) || selective !== RARE_POINTS) {
      throw new Error(`unexpected counts: ${points} points, ${visible} visible, ${selective} selective`);
    }
    const run: Record<QueryType, (q: number) => Promise<unknown[]>> = {
      dense: (q) => index.searchDense(queries.dense[q]!, VISIBLE, LIMIT),
      sparse: (q) => index.searchSparse(queries.sparse[q]!, VISIBLE, LIMIT),
      selective: (q) => index.searchDense(queries.dense[q]!, SELECTIVE, LIMIT),
    };
    for (const type of QUERY_TYPES)
      for (let q = 0; q < Math.min(WARMUP, task.queries); q++) await run[type](q);
    const times: Record<QueryType, number[]> = { dense: [], sparse: [], selective: [] };
    const results: Record<QueryType, number> = { dense: 0, sparse: 0, selective: 0 };
    for (let start = 0; start < task.queries; start += ROUND) {
      for (const type of QUERY_TYPES) {
        for (let q = start; q < Math.min(start + ROUND, task.queries); q++) {
          const t = performance.now();
          const hits = await run[type](q);
          times[type].push(performance.now() - t);
          results[type] += hits.length;
        }
      }
    }
    let denseRecallAt10: number | undefined;
    if (task.truthFile !== undefined) {
      const truth = JSON.parse(readFileSync(task.truthFile, 'utf8')) as string[][];
      let found = 0;
      let wanted = 0;
      for (let q = 0; q < task.queries; q++) {
        const want = new Set(truth[q]);
        const got = await index.searchDense(queries.dense[q]!, VISIBLE, LIMIT);
        found += got.filter((p) => want.has(p.id)).length;
        wanted += want.size;
      }
      denseRecallAt10 = round3(found / wanted);
    }
    if (exactStore !== undefined) {
      const exact = exactStore.index(COLLECTION);
      let found = 0;
      let wanted = 0;
      for (let q = 0; q < task.queries; q++) {
        const truth = new Set((await exact.searchDense(queries.dense[q]!, VISIBLE, LIMIT)).map((p) => p.id));
        const got = await index.searchDense(queries.dense[q]!, VISIBLE, LIMIT);
        found += got.filter((p) => truth.has(p.id)).length;
        wanted += truth.size;
      }
      denseRecallAt10 = round3(found / wanted);
    }
    const transport = task.transport ? await compareTransports(task, queries) : undefined;
    return {
      points,
      visible,
      selective,
      openMs,
      latency: {
        dense: percentiles(times.dense),
        sparse: percentiles(times.sparse),
        selective: percentiles(times.selective),
      },
      meanResults: {
        dense: results.dense / task.queries,
        sparse: results.sparse / task.queries,
        selective: results.selective / task.queries,
      },
      ...(denseRecallAt10 !== undefined ? { denseRecallAt10 } : {}),
      rssMib: mib(process.memoryUsage().rss),
      peakRssMib: peakRssMib(),
      ...(transport !== undefined ? { transport } : {}),
    };
  } finally {
    await store.close();
    await exactStore?.close();
  }
}

/**
 * The same dense query (visibility filter, limit 10, payload returned) through
 * `@qdrant/js-client-rest` 1.18 with its default headers and through the adapter's own transport,
 * interleaved in rounds of 20 after 20 warm-ups each.
 */
async function compareTransports(task: IndexTask, queries: QuerySet): Promise<TransportResult> {
  const store = createQdrantStore({ url: task.location });
  const index = store.index(COLLECTION);
  const client = new QdrantClient({ url: task.location, checkCompatibility: false });
  const filter = toQdrantFilter(VISIBLE) as Schemas['Filter'];
  try {
    const viaClient = async (q: number) =>
      (
        await client.query(COLLECTION, {
          query: Array.from(queries.dense[q]!),
          using: 'dense',
          filter,
          limit: LIMIT,
          with_payload: true,
          with_vector: false,
        })
      ).points.map((p) => String(p.id));
    const viaAdapter = async (q: number) =>
      (await index.searchDense(queries.dense[q]!, VISIBLE, LIMIT)).map((p) => p.id);
    let sameAnswers = true;
    for (let q = 0; q < Math.min(WARMUP, task.queries); q++) {
      const [a, b] = [await viaClient(q), await viaAdapter(q)];
      sameAnswers &&= a.join() === b.join();
    }
    const client_: number[] = [];
    const adapter: number[] = [];
    for (let start = 0; start < task.queries; start += ROUND) {
      for (const [run, into] of [
        [viaClient, client_],
        [viaAdapter, adapter],
      ] as const) {
        for (let q = start; q < Math.min(start + ROUND, task.queries); q++) {
          const t = performance.now();
          await run(q);
          into.push(performance.now() - t);
        }
      }
    }
    return {
      queries: task.queries,
      jsClientRest: percentiles(client_),
      adapter: percentiles(adapter),
      sameAnswers,
    };
  } finally {
    await store.close();
  }
}

async function runChild(task: Task, resultFile: string): Promise<void> {
  if (task.phase !== 'embed') {
    shape.dims = task.dims;
    shape.quantization = task.quantization;
  }
  const result =
    task.phase === 'embed'
      ? await runEmbed(task)
      : task.phase === 'fill'
        ? await runFill(task)
        : task.phase === 'truth'
          ? await runTruth(task)
          : await runQuery(task);
  writeFileSync(resultFile, JSON.stringify(result));
}

// ---------------------------------------------------------------------------------------------
// The parent: resources, children, report
// ---------------------------------------------------------------------------------------------

/** Cleanups of everything the parent holds, newest first; each runs once. */
const cleanups: (() => Promise<void> | void)[] = [];
let running: ChildProcess | undefined;
/** How long one child may run before the parent kills it (`--child-timeout-min`). */
let childTimeoutMs = 20 * 60_000;

async function cleanUp(): Promise<void> {
  if (running !== undefined && running.exitCode === null && running.signalCode === null)
    running.kill('SIGKILL');
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch (error) {
      console.error('cleanup failed:', error);
    }
  }
}

function child<T>(task: Task, scratch: string): Promise<T> {
  const resultFile = join(scratch, `result-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  return new Promise<T>((resolveResult, reject) => {
    const proc = spawn(
      process.execPath,
      [...process.execArgv, SCRIPT, '--child-task', JSON.stringify(task), '--child-result', resultFile],
      { stdio: 'inherit', cwd: WORKSPACE },
    );
    running = proc;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill('SIGKILL');
    }, childTimeoutMs);
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      running = undefined;
      if (timedOut) {
        reject(
          new Error(
            `${describeTask(task)} killed after --child-timeout-min ${childTimeoutMs / 60_000} (raise it for larger sizes)`,
          ),
        );
        return;
      }
      if (code !== 0) {
        reject(new Error(`${describeTask(task)} failed (exit ${code} ${signal ?? ''})`));
        return;
      }
      try {
        resolveResult(JSON.parse(readFileSync(resultFile, 'utf8')) as T);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

function describeTask(task: Task): string {
  return task.phase === 'embed' ? 'embedding phase' : `${task.phase} ${task.adapter} ${task.size}`;
}

interface IndexRun {
  readonly adapter: Adapter;
  readonly size: number;
  readonly fill: FillResult;
  readonly query: QueryResult;
  /** Qdrant only: the server process after the queries (VmRSS) and its peak (VmHWM). */
  readonly qdrantProcess?: { rssMib: number; peakRssMib: number } | 'unavailable';
}

const pad = (s: string | number, n: number) => String(s).padStart(n);
const ms = (p: Percentiles) =>
  `${pad(p.p50.toFixed(2), 8)} ${pad(p.p95.toFixed(2), 8)} ${pad(p.p99.toFixed(2), 8)}`;

function printReport(embed: EmbedResult | undefined, runs: readonly IndexRun[]): void {
  if (embed !== undefined) {
    console.log(`\nEmbeddings: ${embed.model} (${embed.dimensions} dims), one text per call`);
    console.log(`  model load (hash check + ONNX session): ${embed.loadMs.toFixed(0)} ms`);
    console.log(`  texts                     tokens(mean)  texts/s   p50 ms   p95 ms   p99 ms`);
    for (const [name, set] of [
      ['short (~10 tokens)', embed.short],
      ['long  (~50 tokens)', embed.long],
    ] as const) {
      console.log(
        `  ${name.padEnd(20)} ${pad(set.texts, 5)} ${pad(set.tokens.mean.toFixed(1), 12)} ${pad(set.textsPerSecond.toFixed(1), 8)} ${ms(set.ms)}`,
      );
    }
    console.log(`  peak RSS ${embed.peakRssMib} MiB`);
  }
  if (runs.length === 0) return;
  console.log(`\nSearch latency, top-${LIMIT} (ms; visible = u0's SELF + o0's ORG points)`);
  console.log(`  adapter      points  visible  query                  p50      p95      p99  results`);
  for (const r of runs) {
    for (const type of QUERY_TYPES) {
      const label = { dense: 'dense, visible', sparse: 'sparse, visible', selective: 'dense, 30-pt session' }[
        type
      ];
      console.log(
        `  ${r.adapter.padEnd(9)} ${pad(r.size, 8)} ${pad(r.query.visible, 8)}  ${label.padEnd(20)} ${ms(r.query.latency[type])} ${pad(r.query.meanResults[type].toFixed(1), 8)}`,
      );
    }
  }
  console.log(`\nInsert (batches of ${BATCH}, wait) and memory`);
  console.log(
    `  adapter      points    pts/s  batch p50  optimize s  open ms  fill RSS  serve RSS  serve peak  Qdrant RSS/peak  recall@10`,
  );
  for (const r of runs) {
    const q = r.qdrantProcess;
    const qdrant = q === undefined ? '-' : q === 'unavailable' ? 'n/a' : `${q.rssMib}/${q.peakRssMib}`;
    console.log(
      `  ${r.adapter.padEnd(9)} ${pad(r.size, 8)} ${pad(r.fill.pointsPerSecond.toFixed(0), 8)} ${pad(r.fill.batchMs.p50.toFixed(1), 10)} ${pad(r.fill.optimizeMs !== undefined ? (r.fill.optimizeMs / 1000).toFixed(1) : '-', 11)} ${pad(r.query.openMs.toFixed(0), 8)} ${pad(r.fill.peakRssMib, 9)} ${pad(r.query.rssMib, 10)} ${pad(r.query.peakRssMib, 11)} ${pad(qdrant, 16)} ${pad(r.query.denseRecallAt10?.toFixed(3) ?? 'exact', 10)}`,
    );
  }
  console.log(
    '  (RSS in MiB: node process of the fill phase (peak), of the query phase (now, peak); Qdrant server)',
  );
  for (const r of runs) {
    const t = r.query.transport;
    if (t === undefined) continue;
    console.log(
      `\nQdrant transport at ${r.size} points, dense visible query (ms), same answers: ${t.sameAnswers}`,
    );
    console.log(
      `  @qdrant/js-client-rest 1.18 query()   p50 ${t.jsClientRest.p50.toFixed(2)}  p99 ${t.jsClientRest.p99.toFixed(2)}`,
    );
    console.log(
      `  adapter (QdrantHttp) searchDense     p50 ${t.adapter.p50.toFixed(2)}  p99 ${t.adapter.p99.toFixed(2)}`,
    );
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'bench/out/index.json' },
      sizes: { type: 'string', default: '10000,100000' },
      queries: { type: 'string', default: '200' },
      adapters: { type: 'string', default: 'embedded,qdrant' },
      texts: { type: 'string', default: '200' },
      dims: { type: 'string', default: '512' },
      quantization: { type: 'string', default: 'none' },
      'skip-embeddings': { type: 'boolean', default: false },
      'child-timeout-min': { type: 'string', default: '20' },
      'child-task': { type: 'string' },
      'child-result': { type: 'string' },
    },
  });
  if (values['child-task'] !== undefined && values['child-result'] !== undefined) {
    await runChild(JSON.parse(values['child-task']) as Task, values['child-result']);
    return;
  }

  const sizes = values.sizes.split(',').map(Number);
  const queries = Number(values.queries);
  const texts = Number(values.texts);
  const adapterNames = values.adapters.split(',');
  if (sizes.some((n) => !Number.isInteger(n) || n < 1000)) throw new Error('--sizes: integers ≥ 1000');
  if (!Number.isInteger(queries) || queries < 1) throw new Error('--queries: a positive integer');
  if (!Number.isInteger(texts) || texts < 1) throw new Error('--texts: a positive integer');
  if (adapterNames.some((a) => a !== 'embedded' && a !== 'qdrant'))
    throw new Error('--adapters: embedded,qdrant');
  const adapters = adapterNames as Adapter[];
  shape.dims = Number(values.dims);
  if (!Number.isInteger(shape.dims) || shape.dims < 8) throw new Error('--dims: an integer ≥ 8');
  if (values.quantization !== 'none' && values.quantization !== 'int8')
    throw new Error('--quantization: none or int8 (embedded index only)');
  shape.quantization = values.quantization;
  const timeoutMin = Number(values['child-timeout-min']);
  if (!(timeoutMin > 0)) throw new Error('--child-timeout-min: a positive number of minutes');
  childTimeoutMs = timeoutMin * 60_000;

  const began = performance.now();
  const startedAt = new Date().toISOString();
  const loadAtStart = loadAverage();
  const scratch = mkdtempSync(join(os.tmpdir(), 'engram-index-bench-'));
  cleanups.push(() => {
    rmSync(scratch, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: cleaning up`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  console.log(`machine: ${JSON.stringify(machine())}; load average ${loadAtStart.join(' ')}`);

  let embed: EmbedResult | undefined;
  if (!values['skip-embeddings']) {
    console.log(`[embed] ${texts} short + ${texts} long texts`);
    embed = await child<EmbedResult>({ phase: 'embed', texts }, scratch);
  }

  const runs: IndexRun[] = [];
  for (const adapter of adapters) {
    for (const size of sizes) {
      const base = {
        adapter,
        size,
        queries,
        dims: shape.dims,
        quantization: adapter === 'embedded' ? shape.quantization : ('none' as const),
        transport: adapter === 'qdrant' && size === 10_000,
      };
      if (adapter === 'embedded') {
        // On disk, not tmpfs: durability (synchronous = FULL) is part of the insert cost.
        const dir = mkdtempSync(join(scratch, 'embedded-'));
        console.log(`[embedded ${size}] fill`);
        const fill = await child<FillResult>({ ...base, phase: 'fill', location: dir }, scratch);
        let truthFile: string | undefined;
        if (base.quantization === 'int8') {
          console.log(`[embedded ${size}] exact answers (float32)`);
          const truth = await child<string[][]>({ ...base, phase: 'truth', location: dir }, scratch);
          truthFile = join(scratch, `truth-${size}.json`);
          writeFileSync(truthFile, JSON.stringify(truth));
        }
        console.log(`[embedded ${size}] query (${base.quantization})`);
        const query = await child<QueryResult>(
          { ...base, phase: 'query', location: dir, ...(truthFile !== undefined ? { truthFile } : {}) },
          scratch,
        );
        rmSync(dir, { recursive: true, force: true });
        runs.push({ adapter, size, fill, query });
      } else {
        const qdrant = await startQdrant();
        let stopped = false;
        const stop = async () => {
          if (stopped) return;
          stopped = true;
          await qdrant.stop();
        };
        cleanups.push(stop);
        const pid = qdrantPid(qdrant);
        console.log(`[qdrant ${size}] ${qdrant.url} (pid ${pid ?? 'unknown'}) fill`);
        const fill = await child<FillResult>({ ...base, phase: 'fill', location: qdrant.url }, scratch);
        console.log(`[qdrant ${size}] query`);
        const query = await child<QueryResult>({ ...base, phase: 'query', location: qdrant.url }, scratch);
        const qdrantProcess = processRss(pid) ?? 'unavailable';
        await stop();
        runs.push({ adapter, size, fill, query, qdrantProcess });
      }
    }
  }

  const runtimeSeconds = Math.round((performance.now() - began) / 100) / 10;
  const report = {
    benchmark: 'index',
    command: `npm run bench:index -- ${process.argv.slice(2).join(' ')}`.trim().replace(/ --$/, ''),
    date: startedAt,
    gitCommit: gitCommit(),
    machine: machine(),
    loadAverage: { start: loadAtStart, end: loadAverage() },
    runtimeSeconds,
    settings: {
      dims: shape.dims,
      quantization: shape.quantization,
      batch: BATCH,
      limit: LIMIT,
      queries,
      warmup: WARMUP,
      owners: OWNERS,
      orgs: ORGS,
    },
    embeddings: embed,
    index: runs,
  };
  printReport(embed, runs);
  const out = resolve(WORKSPACE, values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(
    `\nruntime ${runtimeSeconds} s; load average ${report.loadAverage.end.join(' ')}; wrote ${out}`,
  );
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
