/**
 * The streamed-ingestion benchmark: a ~10 MiB Markdown document streams in with progress events
 * and becomes searchable (every chunk a point in the vector index).
 *
 *   npm run bench:stream-ingest -- [--size-mb 10] [--out bench/out/stream-ingest.json]
 *     [--timeout-min 30] [--interrupt] [--seed 42] [--part-kib 1024] [--save-doc file.md] [--dry-run]
 *
 * The measured run is one process: it starts the real all-in-one server in-process on the embedded
 * defaults (SQLite and the embedded vector index in a temporary ENGRAM_DATA_DIR, the local
 * embedding model, the indexer on), mints a token for the generated secret, and calls the server
 * over loopback HTTP/2 with the generated connect client, as a remote client would. Peak RSS and
 * event-loop delay are therefore those of the server process (plus a client holding the document).
 *
 * 1. Generates the document deterministically (seeded PRNG): chapters and sections with headings,
 *    paragraphs of English, Chinese and mixed prose built from word lists and sentence templates,
 *    lists, pipe tables (some long enough to be split), fenced code blocks and quotes.
 *    `--size-mb` is in MiB; the document stops at the last whole block below it.
 * 2. Streams it with StreamIngestDocument: the header (with `request_id` and
 *    `expected_size_bytes`), then parts of at most 1 MiB (cut at byte boundaries, so a part may
 *    end inside a UTF-8 sequence, as the API allows), then half-closes. Every progress message is
 *    recorded with its arrival time; the result ends the call (the document is READY). The
 *    server's own timestamps (the document's create and update times, each chunk's create time,
 *    one per committed batch) give the chunking and writing times on the server side.
 * 3. Polls GetDocument (`indexed_chunk_count`) and GetIndexStatus (CHUNK points vs source rows,
 *    outbox backlog) every second from the start of the call until the document is fully
 *    indexed: GetDocument reports every chunk indexed, the index holds a point for every chunk
 *    ("searchable"), and the outbox is empty (the indexer has nothing left to do). The three are
 *    recorded separately because they need not coincide. Gives up after `--timeout-min` minutes
 *    (counted from the server start), reports how far indexing got, and exits 2.
 * 4. With `--interrupt`, the resume check. The API resumes by content, not by byte offset: an
 *    upload cancelled before the half-close leaves nothing; after it, an interruption leaves an
 *    INGESTING document whose committed chunks are kept when the same content is sent again
 *    (chunking is deterministic). The check runs on a server in a child process (fresh data
 *    directory, indexer off, so that it measures ingestion alone and can be killed), with one
 *    `request_id` for owner `bench-resume`:
 *      a. header and half the parts (paced so that the server reports the bytes it received),
 *         then a cancel without half-close: the owner must have no document afterwards;
 *      b. (owner `bench-cancel`, informative) a client cancel as soon as the first WRITING
 *         progress arrives: records how far the server had got by the time the client could react;
 *      c. everything, and SIGKILL of the server process once half of the chunks are committed
 *         (watched in the child's SQLite file, read-only, because a server busy writing does not
 *         get to send progress); the restarted server must show the document INGESTING, partly
 *         written;
 *      d. the same content again with the same `request_id`: the document must be resumed under
 *         its name, only the missing chunks written, and the result equal to the uninterrupted
 *         ingestion: chunk count, content hash, character count, and a SHA-256 over every chunk's
 *         ordinal, kind, offsets, prefixes, heading path, token count and text.
 *
 * Prints a readable report and writes JSON (`--out`). Exit code 0 when the document became fully
 * indexed (and the resume check, if run, passed), 2 on the indexing timeout, 1 on any failure.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import Database from 'better-sqlite3';
import { createAllInOneServer, loadConfig } from '@engram/all-in-one';
import { ItemKind } from '@engram/contracts/common';
import {
  ChunkKind,
  DocumentState,
  IngestionService,
  IngestPhase,
  type Document,
  type IngestDocumentResponse,
  type StreamIngestDocumentRequestSchema,
} from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { mintToken } from '@engram/runtime';
import { choices, percentile, seededRandom } from '@engram/testing';
import { gitCommit, loadAverage, machine, peakRssMib } from './lib/machine.js';

const SCRIPT = fileURLToPath(import.meta.url);
const WORKSPACE = resolve(dirname(SCRIPT), '..');
const MIB = 1024 * 1024;
/** The API's limit for one part. */
const MAX_PART_BYTES = MIB;
const TENANT = 'bench';
const POLL_MS = 1000;

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

interface Percentiles {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const round3 = (x: number) => Math.round(x * 1000) / 1000;
const mib = (bytes: number) => round1(bytes / MIB);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmt = (n: number) => n.toLocaleString('en-US');
const secondsOrDash = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(2)} s`);

/** Nearest-rank percentiles. */
function percentiles(values: readonly number[]): Percentiles | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: round3(percentile(sorted, 50)),
    p90: round3(percentile(sorted, 90)),
    p99: round3(percentile(sorted, 99)),
    min: round3(sorted[0]!),
    max: round3(sorted.at(-1)!),
    mean: round3(sorted.reduce((a, b) => a + b, 0) / sorted.length),
  };
}

// ---------------------------------------------------------------------------------------------
// The document: deterministic Markdown from word lists and templates (nothing copied)
// ---------------------------------------------------------------------------------------------

const words = (s: string) => s.trim().split(/\s+/);

const EN = {
  det: words('the a this that every one another each some no'),
  adj: words(
    'quiet bright careful distant early late narrow broad steady fragile heavy light patient sudden ' +
      'ordinary curious honest remote local shared private public simple complex gradual rapid silent ' +
      'golden northern southern ancient modern useful hidden formal informal reliable uneven familiar ' +
      'strange gentle rough smooth minor major brief lasting open closed careful generous strict',
  ),
  noun: words(
    'river city garden library engineer teacher village market report system index harbor bridge ' +
      'committee station orchard archive question answer method model budget season winter summer ' +
      'journey letter notebook window mountain valley forest museum council kitchen workshop machine ' +
      'schedule contract customer student doctor painter farmer sailor record signal pattern theory ' +
      'experiment sample server queue cluster release version document memory window harvest border',
  ),
  verb: [
    ['describe', 'describes', 'described'],
    ['follow', 'follows', 'followed'],
    ['change', 'changes', 'changed'],
    ['measure', 'measures', 'measured'],
    ['build', 'builds', 'built'],
    ['keep', 'keeps', 'kept'],
    ['find', 'finds', 'found'],
    ['study', 'studies', 'studied'],
    ['carry', 'carries', 'carried'],
    ['open', 'opens', 'opened'],
    ['review', 'reviews', 'reviewed'],
    ['replace', 'replaces', 'replaced'],
    ['protect', 'protects', 'protected'],
    ['connect', 'connects', 'connected'],
    ['record', 'records', 'recorded'],
    ['explain', 'explains', 'explained'],
    ['move', 'moves', 'moved'],
    ['repair', 'repairs', 'repaired'],
    ['share', 'shares', 'shared'],
    ['compare', 'compares', 'compared'],
  ] as const,
  prep: words('in near across under beside behind through within beyond along toward around after before'),
  adv: words(
    'slowly quickly carefully rarely often usually eventually suddenly quietly clearly perhaps still ' +
      'already nearly barely gladly openly',
  ),
  conj: words('and but while because although so whereas'),
  pron: words('she he they we it'),
  modal: words('can should might will must could'),
  name: words('Mara Tomas Ines Olek Priya Hana Felix Ruth Dario Lena Yusuf Aiko Bruno Nadia'),
};

const ZH = {
  time: words(
    '今天 昨天 去年春天 上个月 第二天早上 那年冬天 不久以后 最近几年 傍晚时分 周末 当时 后来 每年秋天 会议结束后',
  ),
  subject: words(
    '我们 研究人员 团队 老师 这位工程师 村里的老人 学生们 项目经理 市场部门 邻居 作者 委员会 医生 年轻的画家 客户',
  ),
  adv: words('终于 仍然 逐渐 常常 已经 一直 再次 认真地 悄悄地 很快 慢慢地 反复'),
  verb: words('讨论 整理 发现 记录 改进 比较 分析 修复 描述 设计 检查 保存 翻译 测量 解释 准备 安排 调整'),
  adj: words('重要 复杂 简单 安静 明亮 稳定 古老 新鲜 细致 遥远 可靠 温和 清楚 特别 普通 有趣'),
  noun: words(
    '问题 方案 数据 河流 城市 书籍 系统 实验 历史 市场 花园 报告 地图 合同 预算 模型 文档 桥梁 村庄 记忆 课程 ' +
      '工厂 港口 档案 索引 服务器 季节 信件 窗户 山谷 森林 博物馆 厨房 机器 日程 样本 版本 边界',
  ),
  measure: words('三个 几份 一些 许多 两条 五项 一组 十几个 大量 少数'),
  place: words('北京 山谷里 图书馆 工厂 海边 小镇上 实验室 会议室 市场旁边 河岸 学校 车站'),
  connective: words('因此 但是 于是 同时 然而 所以 而且 后来'),
  result: words(
    '结果比预期更好 大家都很满意 问题还没有解决 需要更多时间 计划被推迟了 效果十分明显 还要继续观察 新的想法出现了',
  ),
  tech: words('API Kubernetes SQLite gRPC JSON Markdown Python TypeScript HTTP/2 CPU GPU Docker Linux'),
};

const CODE_WORDS = words(
  'user order item index chunk batch queue record buffer cache token value result count total limit ' +
    'offset page cursor event state config client server handler stream part size name path',
);

function makeWriter(random: () => number) {
  const { pick } = choices(random);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const chance = (p: number) => random() < p;
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

  const enNounPhrase = () => {
    const phrase = `${chance(0.6) ? `${pick(EN.adj)} ` : ''}${pick(EN.noun)}`;
    const det = pick(EN.det);
    return `${det === 'a' && /^[aeiou]/.test(phrase) ? 'an' : det} ${phrase}`;
  };
  const enSentence = (): string => {
    const v = pick(EN.verb);
    switch (int(0, 5)) {
      case 0:
        return `${cap(enNounPhrase())} ${v[2]} ${enNounPhrase()} ${pick(EN.prep)} ${enNounPhrase()}.`;
      case 1:
        return `${cap(pick(EN.adv))}, ${enNounPhrase()} ${v[1]} ${enNounPhrase()} ${pick(EN.conj)} ${pick(EN.pron)} ${pick(EN.verb)[2]} ${pick(EN.adv)}.`;
      case 2:
        return `When ${enNounPhrase()} ${v[1]} ${enNounPhrase()}, ${pick(EN.noun)}s ${pick(EN.modal)} ${pick(EN.verb)[0]} ${enNounPhrase()}.`;
      case 3:
        return `${pick(EN.name)} ${v[2]} ${enNounPhrase()} ${pick(EN.prep)} ${enNounPhrase()} in ${int(1890, 2030)}, and ${int(2, 90)} ${pick(EN.noun)}s ${pick(EN.adv)} ${pick(EN.verb)[2]}.`;
      case 4:
        return `Does ${enNounPhrase()} ${v[0]} ${enNounPhrase()} ${pick(EN.prep)} ${enNounPhrase()}?`;
      default:
        return `${cap(enNounPhrase())} is ${pick(EN.adj)}; ${enNounPhrase()} ${pick(EN.modal)} ${v[0]} it ${pick(EN.adv)}.`;
    }
  };
  const zhSentence = (mixed: boolean): string => {
    const term = mixed && chance(0.6) ? ` ${pick(ZH.tech)} ` : '';
    switch (int(0, 4)) {
      case 0:
        return `${pick(ZH.time)}，${pick(ZH.subject)}${pick(ZH.adv)}${pick(ZH.verb)}了${pick(ZH.measure)}${pick(ZH.adj)}的${term}${pick(ZH.noun)}。`;
      case 1:
        return `${pick(ZH.subject)}认为${pick(ZH.noun)}非常${pick(ZH.adj)}，${pick(ZH.connective)}${pick(ZH.subject)}${pick(ZH.verb)}了${term}${pick(ZH.noun)}。`;
      case 2:
        return `在${pick(ZH.place)}，${pick(ZH.subject)}${pick(ZH.verb)}${pick(ZH.noun)}和${pick(ZH.noun)}，${pick(ZH.result)}。`;
      case 3:
        return `${pick(ZH.subject)}用${term || pick(ZH.noun)}${pick(ZH.verb)}${pick(ZH.measure)}${pick(ZH.noun)}，花了${int(2, 48)}个小时。`;
      default:
        return `为什么${pick(ZH.subject)}要${pick(ZH.verb)}这么${pick(ZH.adj)}的${pick(ZH.noun)}？${pick(ZH.result)}。`;
    }
  };

  const paragraph = (): string => {
    const lang = random();
    const n = int(2, 9);
    if (lang < 0.4) return Array.from({ length: n }, enSentence).join(' ');
    if (lang < 0.8) return Array.from({ length: 2 * n }, () => zhSentence(false)).join('');
    // Mixed: Chinese sentences with English terms, and English sentences between them.
    return Array.from({ length: n }, () => (chance(0.3) ? ` ${enSentence()} ` : zhSentence(true)))
      .join('')
      .replace(/ {2,}/g, ' ')
      .trim();
  };
  const list = (): string => {
    const ordered = chance(0.4);
    const zh = chance(0.4);
    const bullet = pick(['-', '*']);
    return Array.from({ length: int(3, 9) }, (_, i) => {
      const marker = ordered ? `${i + 1}.` : bullet;
      const text = chance(0.3)
        ? `**${zh ? pick(ZH.noun) : pick(EN.noun)}**: ${zh ? zhSentence(false) : enSentence()}`
        : zh
          ? zhSentence(chance(0.3))
          : enSentence();
      return `${marker} ${text}`;
    }).join('\n');
  };
  const table = (): string => {
    const columns = [
      ['名称', () => pick(ZH.noun) + pick(ZH.noun)],
      ['Owner', () => pick(EN.name)],
      ['Region', () => pick(ZH.place)],
      ['Count', () => String(int(0, 99_999))],
      ['Status', () => pick(['ok', 'degraded', 'down', '正常', '延迟', 'planned'])],
      ['Latency (ms)', () => (random() * 500).toFixed(1)],
      [
        '日期',
        () =>
          `20${int(18, 29)}-${String(int(1, 12)).padStart(2, '0')}-${String(int(1, 28)).padStart(2, '0')}`,
      ],
      ['Version', () => `v${int(0, 9)}.${int(0, 30)}.${int(0, 99)}`],
      [
        'Notes',
        () => (chance(0.5) ? `${pick(EN.adj)} ${pick(EN.noun)}` : `${pick(ZH.adj)}的${pick(ZH.noun)}`),
      ],
    ] as const;
    const chosen = [...columns].sort(() => random() - 0.5).slice(0, int(3, 6));
    // Mostly small tables; one in ten is long enough to be split between rows.
    const rows = chance(0.1) ? int(40, 120) : int(3, 14);
    const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
    return [
      line(chosen.map(([title]) => title)),
      line(chosen.map(() => '---')),
      ...Array.from({ length: rows }, () => line(chosen.map(([, value]) => value()))),
    ].join('\n');
  };
  const ident = () => {
    const a = pick(CODE_WORDS);
    const b = pick(CODE_WORDS);
    return a === b ? a : `${a}${cap(b)}`;
  };
  const codeLines: Record<string, () => string> = {
    ts: () =>
      pick([
        () => `const ${ident()} = ${ident()}.filter((x) => x.${pick(CODE_WORDS)} > ${int(0, 500)});`,
        () => `if (${ident()} === undefined) throw new Error('missing ${pick(CODE_WORDS)}');`,
        () => `for (const ${pick(CODE_WORDS)} of ${ident()}) total += ${pick(CODE_WORDS)}.size;`,
        () => `export async function ${ident()}(${pick(CODE_WORDS)}: string): Promise<number> {`,
        () => `  return await ${ident()}.get(${pick(CODE_WORDS)}, { limit: ${int(1, 100)} });`,
        () => `}`,
        () => `// ${enSentence()}`,
      ])(),
    python: () =>
      pick([
        () => `def ${pick(CODE_WORDS)}_${pick(CODE_WORDS)}(${pick(CODE_WORDS)}, limit=${int(1, 100)}):`,
        () => `    ${pick(CODE_WORDS)} = [x for x in ${pick(CODE_WORDS)}s if x.${pick(CODE_WORDS)}]`,
        () => `    return sum(${pick(CODE_WORDS)}.size for ${pick(CODE_WORDS)} in ${pick(CODE_WORDS)}s)`,
        () => `# ${zhSentence(false)}`,
        () => `print(f"{${pick(CODE_WORDS)}=} {${pick(CODE_WORDS)}=}")`,
      ])(),
    sql: () =>
      pick([
        () => `SELECT ${pick(CODE_WORDS)}_id, count(*) FROM ${pick(CODE_WORDS)}s`,
        () => `  WHERE ${pick(CODE_WORDS)} > ${int(0, 9999)} AND state = 'READY'`,
        () => `  GROUP BY ${pick(CODE_WORDS)}_id ORDER BY 2 DESC LIMIT ${int(5, 100)};`,
        () => `-- ${enSentence()}`,
      ])(),
    sh: () =>
      pick([
        () => `npm run ${pick(CODE_WORDS)} -- --${pick(CODE_WORDS)} ${int(1, 64)}`,
        () => `grep -rn "${pick(CODE_WORDS)}" src/ | wc -l`,
        () => `export ENGRAM_${pick(CODE_WORDS).toUpperCase()}=${int(1, 9000)}`,
        () => `# ${enSentence()}`,
      ])(),
  };
  const code = (): string => {
    const lang = pick(Object.keys(codeLines));
    const lines = chance(0.05) ? int(60, 160) : int(4, 24);
    const body = Array.from({ length: lines }, () => codeLines[lang]!()).join('\n');
    return `\`\`\`${lang}\n${body}\n\`\`\``;
  };
  const quote = (): string =>
    `> ${chance(0.5) ? enSentence() : zhSentence(false)}\n> ${chance(0.5) ? enSentence() : zhSentence(false)}`;
  const heading = (level: number, n: string): string =>
    `${'#'.repeat(level)} ${n} ${chance(0.5) ? `${cap(pick(EN.adj))} ${pick(EN.noun)}s and the ${pick(EN.noun)}` : `${pick(ZH.noun)}与${pick(ZH.noun)}`}`;

  return { int, chance, pick, paragraph, list, table, code, quote, heading };
}

interface DocumentStats {
  readonly bytes: number;
  readonly codePoints: number;
  readonly cjkShare: number;
  readonly blocks: Record<'heading' | 'paragraph' | 'list' | 'table' | 'code' | 'quote', number>;
}

/** A Markdown document of at most `targetBytes` bytes (whole blocks), and what it contains. */
function generateMarkdown(targetBytes: number, seed: number): { text: string; stats: DocumentStats } {
  const w = makeWriter(seededRandom(seed));
  const blocks: string[] = [];
  const counts = { heading: 0, paragraph: 0, list: 0, table: 0, code: 0, quote: 0 };
  let bytes = 0;
  const add = (kind: keyof typeof counts, block: string): boolean => {
    const size = Buffer.byteLength(block) + (blocks.length > 0 ? 2 : 1);
    if (bytes + size > targetBytes) return false;
    blocks.push(block);
    bytes += size;
    counts[kind] += 1;
    return true;
  };
  const body = (): boolean => {
    for (let i = w.int(2, 8); i > 0; i--) {
      const r = w.int(0, 99);
      const ok =
        r < 58
          ? add('paragraph', w.paragraph())
          : r < 74
            ? add('list', w.list())
            : r < 84
              ? add('table', w.table())
              : r < 95
                ? add('code', w.code())
                : add('quote', w.quote());
      if (!ok) return false;
    }
    return true;
  };
  let chapter = 0;
  outer: for (;;) {
    chapter += 1;
    if (!add('heading', w.heading(1, `${chapter}.`)) || !body()) break;
    for (let s = 1, sections = w.int(3, 8); s <= sections; s++) {
      if (!add('heading', w.heading(2, `${chapter}.${s}`)) || !body()) break outer;
      for (let t = 1, subs = w.int(0, 3); t <= subs; t++) {
        if (!add('heading', w.heading(3, `${chapter}.${s}.${t}`)) || !body()) break outer;
      }
    }
  }
  const text = `${blocks.join('\n\n')}\n`;
  let cjk = 0;
  let codePoints = 0;
  for (const ch of text) {
    codePoints += 1;
    if (/\p{Script=Han}|[，。？！；：]/u.test(ch)) cjk += 1;
  }
  return {
    text,
    stats: { bytes: Buffer.byteLength(text), codePoints, cjkShare: round3(cjk / codePoints), blocks: counts },
  };
}

// ---------------------------------------------------------------------------------------------
// The server and its clients
// ---------------------------------------------------------------------------------------------

interface Running {
  readonly ingestion: Client<typeof IngestionService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly url: string;
  readonly dataDir: string;
  /** Graceful shutdown, bounded: a busy indexer finishes its pass first, which can take minutes. */
  stop(): Promise<'stopped' | 'timed out'>;
}

const secret = randomBytes(32).toString('hex');

async function startServer(label: string, indexer: 'on' | 'off'): Promise<Running> {
  const dataDir = mkdtempSync(join(os.tmpdir(), `engram-stream-bench-${label}-`));
  const config = loadConfig({
    ENGRAM_PORT: '0',
    ENGRAM_HOST: '127.0.0.1',
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_JWT_SECRET: secret,
    ENGRAM_LOG_LEVEL: process.env['ENGRAM_LOG_LEVEL'] ?? 'warn',
    ENGRAM_INDEXER: indexer,
    ...(process.env['ENGRAM_MODEL_DIR'] === undefined
      ? {}
      : { ENGRAM_MODEL_DIR: process.env['ENGRAM_MODEL_DIR'] }),
  });
  const { server } = await createAllInOneServer(config, { handleSignals: false });
  const transport = createGrpcTransport({ baseUrl: server.url });
  return {
    ingestion: createClient(IngestionService, transport),
    retrieval: createClient(RetrievalService, transport),
    url: server.url,
    dataDir,
    stop: async () => {
      const outcome = await Promise.race([
        server.shutdown().then(() => 'stopped' as const),
        sleep(20_000).then(() => 'timed out' as const),
      ]);
      return outcome;
    },
  };
}

async function callOptions(subject: string) {
  const token = await mintToken(
    { subject, tenantId: TENANT, roles: ['admin'] },
    { algorithm: 'HS256', secret: new TextEncoder().encode(secret) },
    { expiresIn: '12h' },
  );
  return { headers: { authorization: `Bearer ${token}` } };
}

// ---------------------------------------------------------------------------------------------
// One streamed ingestion
// ---------------------------------------------------------------------------------------------

interface ProgressEvent {
  /** Arrival time, ms since the call started. */
  readonly tMs: number;
  readonly phase: string;
  readonly bytesReceived: number;
  readonly chunksPlanned: number;
  readonly chunksWritten: number;
  readonly chunksIndexed: number;
  readonly document: string;
}

interface DocumentSummary {
  readonly name: string;
  readonly state: string;
  readonly chunkCount: number;
  readonly indexedChunkCount: number;
  readonly contentHash: string;
  readonly sizeBytes: number;
  readonly charCount: number;
  /** Server clock, epoch ms: the document row's creation (after chunking) and last change. */
  readonly createTimeMs: number;
  readonly updateTimeMs: number;
}

interface StreamOutcome {
  readonly requestId: string;
  /** Wall clock at the start of the call, epoch ms (to place the server's timestamps). */
  readonly startedEpochMs: number;
  readonly partsSent: number;
  readonly partSendMs: number[];
  /** When the client half-closed (all parts sent), ms since the call started. */
  readonly uploadDoneMs?: number;
  readonly events: ProgressEvent[];
  readonly resultMs?: number;
  readonly result?: {
    readonly document: DocumentSummary;
    readonly chunksWritten: number;
    readonly deduplicated: boolean;
    readonly resumed: boolean;
    readonly indexComplete: boolean;
  };
  readonly error?: { readonly code: string; readonly message: string };
}

const phaseName = (p: IngestPhase) => IngestPhase[p];
const stateName = (s: DocumentState) => DocumentState[s];

function summarize(d: Document | undefined): DocumentSummary {
  if (d === undefined) throw new Error('the response carries no document');
  return {
    name: d.name,
    state: stateName(d.state),
    chunkCount: d.chunkCount,
    indexedChunkCount: d.indexedChunkCount,
    contentHash: d.contentHash,
    sizeBytes: Number(d.sizeBytes),
    charCount: Number(d.charCount),
    createTimeMs: d.createTime === undefined ? 0 : timestampMs(d.createTime),
    updateTimeMs: d.updateTime === undefined ? 0 : timestampMs(d.updateTime),
  };
}

type RequestInit = MessageInitShape<typeof StreamIngestDocumentRequestSchema>;

async function streamIngest(
  server: Running,
  subject: string,
  content: Uint8Array,
  options: {
    readonly requestId: string;
    readonly partBytes: number;
    /** Send only this many parts, then cancel without half-closing. */
    readonly stopAfterParts?: number;
    /** Pause between parts (lets the server report RECEIVING progress). */
    readonly partGapMs?: number;
    /** Cancel the call as soon as this returns true for a progress event. */
    readonly cancelWhen?: (event: ProgressEvent) => boolean;
    readonly onEvent?: (event: ProgressEvent) => void;
  },
): Promise<StreamOutcome> {
  const abort = new AbortController();
  const startedEpochMs = Date.now();
  const started = performance.now();
  const since = () => round1(performance.now() - started);
  const partSendMs: number[] = [];
  let uploadDoneMs: number | undefined;

  async function* requests(): AsyncGenerator<RequestInit> {
    yield {
      payload: {
        case: 'header',
        value: {
          document: {
            mimeType: 'text/markdown',
            displayName: 'stream-bench.md',
            sourceUri: 'bench://stream-ingest/stream-bench.md',
          },
          requestId: options.requestId,
          expectedSizeBytes: BigInt(content.byteLength),
        },
      },
    } satisfies RequestInit;
    let index = 0;
    for (let offset = 0; offset < content.byteLength; offset += options.partBytes, index++) {
      if (options.stopAfterParts !== undefined && index >= options.stopAfterParts) {
        // Hold the stream open (no half-close), give the server a moment to take the parts in,
        // then cancel: an upload cancelled before the half-close must leave nothing behind.
        await sleep(1000);
        abort.abort(new Error('bench: cancelled while uploading'));
        return;
      }
      if (options.partGapMs !== undefined && index > 0) await sleep(options.partGapMs);
      if (abort.signal.aborted) return;
      yield {
        payload: { case: 'part', value: { data: content.subarray(offset, offset + options.partBytes) } },
      } satisfies RequestInit;
      partSendMs.push(since());
    }
    uploadDoneMs = since();
  }

  const events: ProgressEvent[] = [];
  let result: StreamOutcome['result'];
  let resultMs: number | undefined;
  let error: StreamOutcome['error'];
  try {
    const responses = server.ingestion.streamIngestDocument(requests(), {
      ...(await callOptions(subject)),
      signal: abort.signal,
    });
    for await (const response of responses) {
      const event = response.event;
      if (event.case === 'progress') {
        const p = event.value;
        const recorded: ProgressEvent = {
          tMs: since(),
          phase: phaseName(p.phase),
          bytesReceived: Number(p.bytesReceived),
          chunksPlanned: p.chunksPlanned,
          chunksWritten: p.chunksWritten,
          chunksIndexed: p.chunksIndexed,
          document: p.document,
        };
        events.push(recorded);
        options.onEvent?.(recorded);
        if (options.cancelWhen?.(recorded) === true) abort.abort(new Error('bench: cancelled while writing'));
      } else if (event.case === 'result') {
        resultMs = since();
        const r: IngestDocumentResponse = event.value;
        result = {
          document: summarize(r.document),
          chunksWritten: r.chunksWritten,
          deduplicated: r.deduplicated,
          resumed: r.resumed,
          indexComplete: r.indexComplete,
        };
      }
    }
  } catch (caught) {
    const e = ConnectError.from(caught);
    error = { code: Code[e.code], message: e.rawMessage };
  }
  return {
    requestId: options.requestId,
    startedEpochMs,
    partsSent: partSendMs.length,
    partSendMs,
    ...(uploadDoneMs === undefined ? {} : { uploadDoneMs }),
    events,
    ...(resultMs === undefined ? {} : { resultMs }),
    ...(result === undefined ? {} : { result }),
    ...(error === undefined ? {} : { error }),
  };
}

// ---------------------------------------------------------------------------------------------
// Chunks: kinds, sizes and a digest that identifies them independently of their ids
// ---------------------------------------------------------------------------------------------

interface ChunkSummary {
  readonly count: number;
  readonly ordinalsContiguous: boolean;
  readonly digest: string;
  readonly kinds: Record<string, number>;
  readonly chars?: Percentiles;
  readonly tokens?: Percentiles;
  /** Distinct chunk create times (server clock, epoch ms), in ordinal order: one per committed batch. */
  readonly batchStartsMs: number[];
}

async function chunkSummary(server: Running, subject: string, name: string): Promise<ChunkSummary> {
  const hash = createHash('sha256');
  const kinds: Record<string, number> = {};
  const chars: number[] = [];
  const tokens: number[] = [];
  const batchStartsMs: number[] = [];
  let count = 0;
  let contiguous = true;
  let pageToken = '';
  const options = await callOptions(subject);
  do {
    const page = await server.ingestion.listChunks({ parent: name, pageSize: 1000, pageToken }, options);
    for (const c of page.chunks) {
      if (c.ordinal !== count) contiguous = false;
      count += 1;
      const kind = ChunkKind[c.kind];
      kinds[kind] = (kinds[kind] ?? 0) + 1;
      chars.push(Array.from(c.text).length);
      tokens.push(c.tokenCount);
      const created = c.createTime === undefined ? 0 : timestampMs(c.createTime);
      if (batchStartsMs.at(-1) !== created) batchStartsMs.push(created);
      hash.update(
        JSON.stringify([
          c.ordinal,
          kind,
          String(c.startOffset),
          String(c.endOffset),
          c.overlapPrefixChars,
          c.headerPrefixChars,
          c.headingPath,
          c.tokenCount,
          c.text,
        ]),
      );
      hash.update('\n');
    }
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  const charStats = percentiles(chars);
  const tokenStats = percentiles(tokens);
  return {
    count,
    ordinalsContiguous: contiguous,
    digest: hash.digest('hex'),
    kinds,
    batchStartsMs,
    ...(charStats === undefined ? {} : { chars: charStats }),
    ...(tokenStats === undefined ? {} : { tokens: tokenStats }),
  };
}

// ---------------------------------------------------------------------------------------------
// The measured run: stream, then wait until every chunk is in the index
// ---------------------------------------------------------------------------------------------

interface Sample {
  readonly tMs: number;
  /** GetDocument, once the document's name is known. */
  readonly state?: string;
  readonly chunkCount?: number;
  readonly indexedChunkCount?: number;
  /** GetIndexStatus, CHUNK kind and the tenant's outbox. */
  readonly chunkPoints?: number;
  readonly chunkSourceRows?: number;
  readonly outboxPending?: number;
  readonly rssMib: number;
  readonly heapUsedMib: number;
}

interface MeasuredRun {
  readonly stream: StreamOutcome;
  readonly samples: Sample[];
  readonly timedOut: boolean;
  readonly milestones: {
    readonly firstProgressMs?: number;
    readonly chunkingMs?: number;
    readonly firstWritingMs?: number;
    readonly readyMs?: number;
    /** GetDocument first reported indexed_chunk_count == chunk_count (READY). */
    readonly documentReportsIndexedMs?: number;
    /** GetIndexStatus first reported as many CHUNK points as the document has chunks. */
    readonly indexPointsCompleteMs?: number;
    /** Both of the above, and the tenant's outbox empty. */
    readonly fullyIndexedMs?: number;
  };
  readonly peakRssMib: number;
  /** Event-loop delay of this process (server and client share it), until READY and after. */
  readonly eventLoopDelayMs: { readonly untilReady: LoopDelay; readonly afterReady: LoopDelay };
  /** Longest time between two consecutive samples (the sampler runs on the same event loop). */
  readonly longestSampleGapMs: number;
}

interface LoopDelay {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

function loopDelay(h: ReturnType<typeof monitorEventLoopDelay>): LoopDelay {
  const toMs = (ns: number) => round1(ns / 1e6);
  return { p50: toMs(h.percentile(50)), p99: toMs(h.percentile(99)), max: toMs(h.max), mean: toMs(h.mean) };
}

async function measuredRun(
  server: Running,
  content: Uint8Array,
  partBytes: number,
  deadline: number,
): Promise<MeasuredRun> {
  const subject = 'bench';
  const options = await callOptions(subject);
  const started = performance.now();
  const since = () => round1(performance.now() - started);
  let name = '';
  let ready = false;
  let chunkCount = 0;
  const samples: Sample[] = [];
  const milestones: {
    documentReportsIndexedMs?: number;
    indexPointsCompleteMs?: number;
    fullyIndexedMs?: number;
  } = {};
  const sampling = { stop: false };
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let lastLog = 0;

  const sample = async (): Promise<void> => {
    const tMs = since();
    const memory = process.memoryUsage();
    const base = { tMs, rssMib: mib(memory.rss), heapUsedMib: mib(memory.heapUsed) };
    let documentPart: Partial<Sample> = {};
    if (name !== '') {
      const { document } = await server.ingestion.getDocument({ name }, options);
      if (document !== undefined) {
        documentPart = {
          state: stateName(document.state),
          chunkCount: document.chunkCount,
          indexedChunkCount: document.indexedChunkCount,
        };
        if (document.state === DocumentState.READY) {
          ready = true;
          chunkCount = document.chunkCount;
        }
      }
    }
    const { indexStatus } = await server.retrieval.getIndexStatus({}, options);
    const chunks = indexStatus?.kinds.find((k) => k.kind === ItemKind.CHUNK);
    const s: Sample = {
      ...base,
      ...documentPart,
      ...(chunks?.indexedPoints === undefined ? {} : { chunkPoints: Number(chunks.indexedPoints) }),
      ...(chunks === undefined ? {} : { chunkSourceRows: Number(chunks.sourceRows) }),
      ...(indexStatus === undefined ? {} : { outboxPending: Number(indexStatus.outboxPending) }),
    };
    samples.push(s);
    if (ready) {
      if (milestones.documentReportsIndexedMs === undefined && s.indexedChunkCount === chunkCount)
        milestones.documentReportsIndexedMs = tMs;
      if (milestones.indexPointsCompleteMs === undefined && (s.chunkPoints ?? 0) >= chunkCount)
        milestones.indexPointsCompleteMs = tMs;
      if (
        milestones.fullyIndexedMs === undefined &&
        s.indexedChunkCount === chunkCount &&
        (s.chunkPoints ?? 0) >= chunkCount &&
        s.outboxPending === 0
      )
        milestones.fullyIndexedMs = tMs;
    }
    if (tMs - lastLog >= 15_000) {
      lastLog = tMs;
      console.log(
        `  [${(tMs / 1000).toFixed(0).padStart(4)} s] ${s.state ?? 'streaming'}: chunks ${s.chunkCount ?? '-'}, ` +
          `indexed (GetDocument) ${s.indexedChunkCount ?? '-'}, CHUNK points ${s.chunkPoints ?? '-'}, ` +
          `outbox pending ${s.outboxPending ?? '-'}, RSS ${s.rssMib} MiB`,
      );
    }
  };

  const sampler = (async () => {
    while (!sampling.stop) {
      const next = performance.now() + POLL_MS;
      try {
        await sample();
      } catch (error) {
        console.error(`  sample failed: ${ConnectError.from(error).message}`);
      }
      await sleep(Math.max(0, next - performance.now()));
    }
  })();

  console.log(`[stream] ${fmt(content.byteLength)} bytes in parts of ${fmt(partBytes)} bytes`);
  const stream = await streamIngest(server, subject, content, {
    requestId: `stream-bench-${Date.now().toString(36)}`,
    partBytes,
    onEvent: (e) => {
      if (e.document !== '') name = e.document;
    },
  });
  if (stream.result !== undefined) {
    name = stream.result.document.name;
    console.log(
      `[stream] READY after ${(stream.resultMs! / 1000).toFixed(2)} s: ${fmt(stream.result.document.chunkCount)} chunks, ` +
        `${stream.events.length} progress events; waiting for the index`,
    );
  } else {
    console.log(`[stream] failed: ${stream.error?.code ?? '?'} ${stream.error?.message ?? ''}`);
  }

  const untilReady = loopDelay(loop);
  loop.reset();
  let timedOut = false;
  if (stream.result !== undefined) {
    while (milestones.fullyIndexedMs === undefined) {
      if (performance.now() > deadline) {
        timedOut = true;
        break;
      }
      await sleep(250);
    }
  }
  sampling.stop = true;
  await sampler;
  const afterReady = loopDelay(loop);
  loop.disable();

  const firstOf = (phase: string) => stream.events.find((e) => e.phase === phase)?.tMs;
  const firstProgressMs = stream.events[0]?.tMs;
  const chunkingMs = firstOf('CHUNKING');
  const firstWritingMs = firstOf('WRITING');
  return {
    stream,
    samples,
    timedOut,
    milestones: {
      ...(firstProgressMs === undefined ? {} : { firstProgressMs }),
      ...(chunkingMs === undefined ? {} : { chunkingMs }),
      ...(firstWritingMs === undefined ? {} : { firstWritingMs }),
      ...(stream.resultMs === undefined ? {} : { readyMs: stream.resultMs }),
      ...milestones,
    },
    peakRssMib: peakRssMib(),
    eventLoopDelayMs: { untilReady, afterReady },
    longestSampleGapMs: round1(Math.max(0, ...samples.slice(1).map((x, i) => x.tMs - samples[i]!.tMs))),
  };
}

// ---------------------------------------------------------------------------------------------
// The resume check
// ---------------------------------------------------------------------------------------------

interface ResumeCheck {
  readonly requestId: string;
  /** a. Cancelled before the half-close: nothing may be kept. */
  readonly cancelledUpload: {
    readonly stream: StreamOutcome;
    readonly serverReportedBytes: number;
    readonly documentsLeft: number;
  };
  /**
   * b. A client cancel as soon as the first WRITING progress arrives (another owner). Informative:
   * shows how much the server had committed when the client could first react.
   */
  readonly clientCancelDuringWrite: {
    readonly stream: StreamOutcome;
    readonly cancelledAtChunksWritten?: number;
    readonly document?: DocumentSummary;
  };
  /** c. The server process killed (SIGKILL) once half of the chunks were committed. */
  readonly crashDuringWrite: {
    readonly stream: StreamOutcome;
    /** ms after the call started when the committed count passed half and the kill was sent. */
    readonly killedAtMs?: number;
    readonly chunksCommittedAtKill?: number;
    /** The document as the restarted server reports it, before the retry. */
    readonly document?: DocumentSummary;
  };
  /** d. The same content again with the same request id, on the restarted server. */
  readonly resumed: { readonly stream: StreamOutcome; readonly chunks?: ChunkSummary };
  readonly checks: Record<string, boolean>;
  readonly passed: boolean;
}

const CHILD_SECRET_ENV = 'STREAM_BENCH_JWT_SECRET';

/** This script as a child process serving the all-in-one server on `dataDir` (indexer off). */
async function serveChild(dataDir: string): Promise<void> {
  const config = loadConfig({
    ENGRAM_PORT: '0',
    ENGRAM_HOST: '127.0.0.1',
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_JWT_SECRET: process.env[CHILD_SECRET_ENV],
    ENGRAM_LOG_LEVEL: process.env['ENGRAM_LOG_LEVEL'] ?? 'warn',
    ENGRAM_INDEXER: 'off',
    ...(process.env['ENGRAM_MODEL_DIR'] === undefined
      ? {}
      : { ENGRAM_MODEL_DIR: process.env['ENGRAM_MODEL_DIR'] }),
  });
  const { server } = await createAllInOneServer(config, { handleSignals: true });
  console.log(`STREAM_BENCH_URL ${server.url}`);
}

interface ChildServer extends Running {
  readonly child: ChildProcess;
  readonly exited: Promise<NodeJS.Signals | number | null>;
}

function startChildServer(dataDir: string): Promise<ChildServer> {
  const child = spawn(process.execPath, [...process.execArgv, SCRIPT, '--serve-child', dataDir], {
    cwd: WORKSPACE,
    env: { ...process.env, [CHILD_SECRET_ENV]: secret },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolveExit) => {
    child.once('exit', (exitCode, signal) => {
      resolveExit(signal ?? exitCode);
    });
  });
  return new Promise((resolveServer, reject) => {
    let buffered = '';
    child.stdout.on('data', (data: Buffer) => {
      buffered += data.toString();
      const match = /STREAM_BENCH_URL (\S+)/.exec(buffered);
      if (match === null) return;
      buffered = '';
      const url = match[1]!;
      const transport = createGrpcTransport({ baseUrl: url });
      resolveServer({
        ingestion: createClient(IngestionService, transport),
        retrieval: createClient(RetrievalService, transport),
        url,
        dataDir,
        child,
        exited,
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return 'stopped';
          child.kill('SIGTERM');
          return Promise.race([
            exited.then(() => 'stopped' as const),
            sleep(20_000).then(() => 'timed out' as const),
          ]);
        },
      });
    });
    void exited.then((how) => {
      reject(new Error(`the server child exited (${String(how)}) before listening`));
    });
  });
}

/**
 * Watches the source of truth of a child server directly (read-only SQLite, WAL readers see every
 * commit) for the owner's document, because a server busy writing chunks does not get to send its
 * progress messages; calls `kill` once the document is INGESTING with at least `atChunks` chunks.
 */
async function killWhenCommitted(
  dataDir: string,
  owner: string,
  atChunks: number,
  kill: () => void,
  done: Promise<unknown>,
): Promise<number | undefined> {
  const state = { finished: false };
  void done.finally(() => {
    state.finished = true;
  });
  const file = join(dataDir, 'engram.db');
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const query = db.prepare<[string, string], { state: string; chunk_count: number }>(
      'SELECT state, chunk_count FROM documents WHERE tenant_id = ? AND owner_id = ?',
    );
    while (!state.finished) {
      const row = query.get(TENANT, owner);
      if (row?.state === 'INGESTING' && row.chunk_count >= atChunks) {
        kill();
        return row.chunk_count;
      }
      if (row?.state === 'READY') return undefined;
      await sleep(5);
    }
    return undefined;
  } finally {
    db.close();
  }
}

async function resumeCheck(
  content: Uint8Array,
  partBytes: number,
  baseline: { document: DocumentSummary; chunks: ChunkSummary },
): Promise<ResumeCheck> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'engram-stream-bench-resume-'));
  const owner = 'bench-resume';
  const requestId = `resume-${Date.now().toString(36)}`;
  const parts = Math.ceil(content.byteLength / partBytes);
  let server = await startChildServer(dataDir);
  try {
    // a. Cancelled while uploading: half the parts, paced so that the server reports bytes.
    console.log(`[resume] a. cancel after ${Math.floor(parts / 2)} of ${parts} parts (no half-close)`);
    const upload = await streamIngest(server, owner, content, {
      requestId,
      partBytes,
      stopAfterParts: Math.floor(parts / 2),
      partGapMs: 300,
    });
    const serverReportedBytes = Math.max(0, ...upload.events.map((e) => e.bytesReceived));
    const left = await server.ingestion.listDocuments({ ownedByCaller: true }, await callOptions(owner));
    console.log(
      `[resume]    ${upload.error?.code ?? 'no error'}; the server had reported ${fmt(serverReportedBytes)} bytes; ` +
        `documents left: ${left.documents.length}`,
    );

    // b. A client cancel at the first WRITING progress (another owner: no deduplication).
    console.log('[resume] b. client cancel at the first WRITING progress message (owner bench-cancel)');
    let cancelledAtChunksWritten: number | undefined;
    const cancel = await streamIngest(server, 'bench-cancel', content, {
      requestId: `cancel-${Date.now().toString(36)}`,
      partBytes,
      cancelWhen: (e) => {
        if (e.phase !== 'WRITING') return false;
        cancelledAtChunksWritten ??= e.chunksWritten;
        return true;
      },
    });
    const cancelName = cancel.events.findLast((e) => e.document !== '')?.document ?? '';
    const cancelled =
      cancelName === ''
        ? undefined
        : summarize(
            (await server.ingestion.getDocument({ name: cancelName }, await callOptions('bench-cancel')))
              .document,
          );
    console.log(
      `[resume]    ${cancel.error?.code ?? `no error (${cancel.result === undefined ? 'no result' : 'result received'})`}; ` +
        `cancel sent at ${fmt(cancelledAtChunksWritten ?? 0)} chunks written; document now ${cancelled?.state ?? '-'} ` +
        `with ${fmt(cancelled?.chunkCount ?? 0)} chunks`,
    );

    // c. Crash: SIGKILL the server once half of the chunks are committed.
    const half = Math.ceil(baseline.document.chunkCount / 2);
    console.log(`[resume] c. SIGKILL the server once ${fmt(half)} chunks are committed`);
    const started = performance.now();
    let killedAtMs: number | undefined;
    const crashed = server;
    const crashStream = streamIngest(crashed, owner, content, { requestId, partBytes });
    const chunksCommittedAtKill = await killWhenCommitted(
      dataDir,
      owner,
      half,
      () => {
        killedAtMs = round1(performance.now() - started);
        crashed.child.kill('SIGKILL');
      },
      crashStream,
    );
    const crash = await crashStream;
    await crashed.exited;
    server = await startChildServer(dataDir);
    const crashName = crash.events.findLast((e) => e.document !== '')?.document;
    const listed = await server.ingestion.listDocuments({ ownedByCaller: true }, await callOptions(owner));
    const interruptedMessage = listed.documents.find((d) => crashName === undefined || d.name === crashName);
    const interrupted = interruptedMessage === undefined ? undefined : summarize(interruptedMessage);
    console.log(
      `[resume]    killed at ${secondsOrDash(killedAtMs)} with ${fmt(chunksCommittedAtKill ?? 0)} chunks committed; ` +
        `call ended ${crash.error?.code ?? 'without error'}; after restart the document is ` +
        `${interrupted?.state ?? '-'} with ${fmt(interrupted?.chunkCount ?? 0)} chunks`,
    );

    // d. The same content again, same request id, on the restarted server.
    console.log('[resume] d. the same content again with the same request_id, on the restarted server');
    const resumed = await streamIngest(server, owner, content, { requestId, partBytes });
    const r = resumed.result;
    const chunks = r === undefined ? undefined : await chunkSummary(server, owner, r.document.name);
    const checks: Record<string, boolean> = {
      'a. cancelled upload: call ended CANCELED': upload.error?.code === 'Canceled',
      'a. cancelled upload: nothing kept': left.documents.length === 0,
      'c. crash: document left INGESTING, partly written':
        interrupted?.state === 'INGESTING' &&
        interrupted.chunkCount > 0 &&
        interrupted.chunkCount < baseline.document.chunkCount,
      'd. retry: READY': r?.document.state === 'READY',
      'd. retry: resumed the interrupted document (same name)':
        r?.resumed === true && interrupted !== undefined && r.document.name === interrupted.name,
      'd. retry: wrote only the missing chunks':
        r !== undefined &&
        interrupted !== undefined &&
        r.chunksWritten === baseline.document.chunkCount - interrupted.chunkCount,
      'd. same chunk count as uninterrupted': r?.document.chunkCount === baseline.document.chunkCount,
      'd. same content hash as uninterrupted': r?.document.contentHash === baseline.document.contentHash,
      'd. same char count as uninterrupted': r?.document.charCount === baseline.document.charCount,
      'd. same chunks (digest) as uninterrupted': chunks?.digest === baseline.chunks.digest,
      'd. ordinals 0..n-1, no gaps or repeats': chunks?.ordinalsContiguous === true,
    };
    return {
      requestId,
      cancelledUpload: { stream: upload, serverReportedBytes, documentsLeft: left.documents.length },
      clientCancelDuringWrite: {
        stream: cancel,
        ...(cancelledAtChunksWritten === undefined ? {} : { cancelledAtChunksWritten }),
        ...(cancelled === undefined ? {} : { document: cancelled }),
      },
      crashDuringWrite: {
        stream: crash,
        ...(killedAtMs === undefined ? {} : { killedAtMs }),
        ...(chunksCommittedAtKill === undefined ? {} : { chunksCommittedAtKill }),
        ...(interrupted === undefined ? {} : { document: interrupted }),
      },
      resumed: { stream: resumed, ...(chunks === undefined ? {} : { chunks }) },
      checks,
      passed: Object.values(checks).every(Boolean),
    };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/**
 * The server's side of the run, from its own clocks (the same machine): the document row is
 * created once the content is normalized, redacted, chunked and token-counted; every batch of
 * chunks carries the time its transaction started; READY is the document's last update. The
 * client's progress times cannot show this, because the server does not get to send its progress
 * messages while it chunks and writes (see the report).
 */
function serverTimeline(stream: StreamOutcome, chunks: ChunkSummary | undefined) {
  const r = stream.result;
  if (r === undefined || stream.uploadDoneMs === undefined) return undefined;
  const uploadDone = stream.startedEpochMs + stream.uploadDoneMs;
  const created = r.document.createTimeMs;
  const ready = r.document.updateTimeMs;
  const starts = chunks?.batchStartsMs ?? [];
  const batchMs = percentiles([
    ...starts.slice(1).map((t, i) => t - starts[i]!),
    ...(starts.length > 0 ? [ready - starts.at(-1)!] : []),
  ]);
  return {
    /** Half-close → document row: hashing, normalization, redaction, chunking, token counts. */
    chunkingMs: created - uploadDone,
    /** Document row → READY: every batch of chunks with its outbox rows. */
    writingMs: ready - created,
    batches: starts.length,
    /** Per batch (200 chunks, one transaction), start to next start. */
    ...(batchMs === undefined ? {} : { batchMs }),
    chunksPerSecondWriting:
      ready > created ? round1(r.document.chunkCount / ((ready - created) / 1000)) : undefined,
    /** READY (server clock) → the client has the result. */
    readyToResultMs: stream.startedEpochMs + (stream.resultMs ?? 0) - ready,
    documentCreatedMs: created - stream.startedEpochMs,
    readyCommittedMs: ready - stream.startedEpochMs,
  };
}

function rates(run: MeasuredRun, chunkCount: number) {
  const m = run.milestones;
  const indexingSeconds =
    m.fullyIndexedMs !== undefined && m.readyMs !== undefined
      ? (m.fullyIndexedMs - m.readyMs) / 1000
      : undefined;
  const searchableSeconds =
    m.indexPointsCompleteMs !== undefined && m.readyMs !== undefined
      ? (m.indexPointsCompleteMs - m.readyMs) / 1000
      : undefined;
  return {
    chunksPerSecondToReady: m.readyMs === undefined ? undefined : round1(chunkCount / (m.readyMs / 1000)),
    chunksPerSecondSearchableAfterReady:
      searchableSeconds === undefined ? undefined : round1(chunkCount / searchableSeconds),
    chunksPerSecondIndexedAfterReady:
      indexingSeconds === undefined ? undefined : round1(chunkCount / indexingSeconds),
    chunksPerSecondIndexedOverall:
      m.fullyIndexedMs === undefined ? undefined : round1(chunkCount / (m.fullyIndexedMs / 1000)),
  };
}

function intervals(events: readonly ProgressEvent[]) {
  const gaps = events.slice(1).map((e, i) => e.tMs - events[i]!.tMs);
  const writing = events.filter((e) => e.phase === 'WRITING');
  return {
    all: percentiles(gaps),
    writing: percentiles(writing.slice(1).map((e, i) => e.tMs - writing[i]!.tMs)),
  };
}

function printReport(
  doc: DocumentStats,
  run: MeasuredRun,
  chunks: ChunkSummary | undefined,
  resume: ResumeCheck | undefined,
): void {
  const b = doc.blocks;
  console.log(
    `\nDocument: ${fmt(doc.bytes)} bytes (${mib(doc.bytes)} MiB), ${fmt(doc.codePoints)} code points, ` +
      `${(doc.cjkShare * 100).toFixed(1)} % Chinese; ${fmt(b.heading)} headings, ${fmt(b.paragraph)} paragraphs, ` +
      `${fmt(b.list)} lists, ${fmt(b.table)} tables, ${fmt(b.code)} code blocks, ${fmt(b.quote)} quotes`,
  );
  const s = run.stream;
  console.log(
    `Stream: ${s.partsSent} parts, upload done at ${secondsOrDash(s.uploadDoneMs)}; ${s.events.length} progress events`,
  );
  const events = s.events;
  const shown =
    events.length <= 40 ? events : [...events.slice(0, 12), undefined, ...events.slice(events.length - 12)];
  console.log('\n      t (s)  phase        bytes received  planned  written  indexed');
  for (const e of shown) {
    if (e === undefined) {
      console.log(`        …    (${events.length - 24} more)`);
      continue;
    }
    console.log(
      `  ${(e.tMs / 1000).toFixed(3).padStart(9)}  ${e.phase.padEnd(10)} ${fmt(e.bytesReceived).padStart(16)} ${fmt(e.chunksPlanned).padStart(8)} ${fmt(e.chunksWritten).padStart(8)} ${fmt(e.chunksIndexed).padStart(8)}`,
    );
  }
  if (s.result !== undefined) {
    const r = s.result;
    console.log(
      `  ${(s.resultMs! / 1000).toFixed(3).padStart(9)}  RESULT     ${r.document.state}, ${fmt(r.document.chunkCount)} chunks, ` +
        `written ${fmt(r.chunksWritten)}, indexed ${fmt(r.document.indexedChunkCount)}, index_complete ${r.indexComplete}`,
    );
  }
  const gaps = intervals(events);
  const p = (x: Percentiles | undefined) =>
    x === undefined
      ? '-'
      : `p50 ${x.p50.toFixed(1)}  p90 ${x.p90.toFixed(1)}  p99 ${x.p99.toFixed(1)}  max ${x.max.toFixed(1)} ms (n ${x.n})`;
  console.log(`\nProgress intervals, all phases: ${p(gaps.all)}`);
  console.log(`Progress intervals, WRITING:    ${p(gaps.writing)}`);

  const m = run.milestones;
  const count = s.result?.document.chunkCount ?? 0;
  const rate = rates(run, count);
  const server = serverTimeline(s, chunks);
  console.log('\n  milestone (client clock unless marked server)         t since call start');
  const row = (label: string, ms: number | undefined) => {
    console.log(`  ${label.padEnd(54)} ${secondsOrDash(ms).padStart(12)}`);
  };
  row('first progress (RECEIVING)', m.firstProgressMs);
  row('upload done (client half-closed)', s.uploadDoneMs);
  row('CHUNKING', m.chunkingMs);
  row('first WRITING', m.firstWritingMs);
  row('server: document row created (chunking done)', server?.documentCreatedMs);
  row('server: READY committed (last batch)', server?.readyCommittedMs);
  row('result received (READY)', m.readyMs);
  row('GetDocument: indexed_chunk_count == chunk_count', m.documentReportsIndexedMs);
  row('searchable: GetIndexStatus CHUNK points >= chunk_count', m.indexPointsCompleteMs);
  row('fully indexed (both, and outbox empty)', m.fullyIndexedMs);
  const r = (x: number | undefined) => (x === undefined ? '-' : fmt(x));
  if (server !== undefined) {
    const bm = server.batchMs;
    console.log(
      `\nServer: chunking (half-close → document row) ${secondsOrDash(server.chunkingMs)}; writing ${secondsOrDash(server.writingMs)} ` +
        `in ${server.batches} batches (${r(server.chunksPerSecondWriting)} chunks/s; per batch p50 ${bm?.p50 ?? '-'} ` +
        `p90 ${bm?.p90 ?? '-'} max ${bm?.max ?? '-'} ms); READY → result at the client ${secondsOrDash(server.readyToResultMs)}`,
    );
  }
  console.log(
    `Chunks: ${fmt(count)}; ${r(rate.chunksPerSecondToReady)}/s from call start to READY; searchable at ` +
      `${r(rate.chunksPerSecondSearchableAfterReady)}/s after READY; fully indexed at ${r(rate.chunksPerSecondIndexedAfterReady)}/s ` +
      `after READY (${r(rate.chunksPerSecondIndexedOverall)}/s from call start)`,
  );
  if (chunks !== undefined) {
    console.log(
      `  kinds ${JSON.stringify(chunks.kinds)}; chars p50 ${chunks.chars?.p50 ?? '-'} p90 ${chunks.chars?.p90 ?? '-'} max ${chunks.chars?.max ?? '-'}; ` +
        `tokens p50 ${chunks.tokens?.p50 ?? '-'} p90 ${chunks.tokens?.p90 ?? '-'} max ${chunks.tokens?.max ?? '-'}`,
    );
  }
  const rss = run.samples.map((x) => x.rssMib);
  const atReady = run.samples.find((x) => m.readyMs !== undefined && x.tMs >= m.readyMs)?.rssMib;
  console.log(
    `Memory: peak RSS (maxRSS) ${run.peakRssMib} MiB; sampled RSS max ${rss.length > 0 ? Math.max(...rss) : '-'} MiB, ` +
      `first sample after READY ${atReady ?? '-'} MiB, last ${rss.at(-1) ?? '-'} MiB`,
  );
  const d = run.eventLoopDelayMs;
  console.log(
    `Event loop (server and client share it): delay until READY p99 ${d.untilReady.p99} ms, max ${d.untilReady.max} ms; ` +
      `after READY p99 ${d.afterReady.p99} ms, max ${d.afterReady.max} ms; longest gap between 1 s samples ${run.longestSampleGapMs} ms`,
  );
  if (run.timedOut) {
    const last = run.samples.at(-1);
    console.log(
      `\nTIMED OUT: after ${secondsOrDash(last?.tMs)}, GetDocument reports ${r(last?.indexedChunkCount)} of ${fmt(count)} chunks indexed; ` +
        `the index holds ${r(last?.chunkPoints)} CHUNK points; ${r(last?.outboxPending)} outbox rows pending`,
    );
  }

  if (resume !== undefined) {
    console.log(`\nResume check (request_id ${resume.requestId}; child server process, indexer off):`);
    const a = resume.cancelledUpload;
    console.log(
      `  a. upload cancelled after ${a.stream.partsSent} parts (server reported ${fmt(a.serverReportedBytes)} bytes ` +
        `received): ${a.stream.error?.code ?? 'no error'}, ${a.documentsLeft} documents left`,
    );
    const b = resume.clientCancelDuringWrite;
    console.log(
      `  b. client cancel at the first WRITING message (${fmt(b.cancelledAtChunksWritten ?? 0)} chunks written by then): ` +
        `${b.stream.error?.code ?? (b.stream.result === undefined ? 'no error' : 'result received')}; document ` +
        `${b.document?.state ?? '-'} with ${fmt(b.document?.chunkCount ?? 0)} chunks`,
    );
    const c = resume.crashDuringWrite;
    console.log(
      `  c. SIGKILL at ${secondsOrDash(c.killedAtMs)} with ${fmt(c.chunksCommittedAtKill ?? 0)} chunks committed; ` +
        `after restart ${c.document?.state ?? '-'} with ${fmt(c.document?.chunkCount ?? 0)} chunks`,
    );
    const rr = resume.resumed.stream.result;
    console.log(
      `  d. retry: ${rr === undefined ? (resume.resumed.stream.error?.code ?? '?') : `${rr.document.state}, resumed ${rr.resumed}, wrote ${fmt(rr.chunksWritten)} of ${fmt(rr.document.chunkCount)} chunks`} ` +
        `in ${secondsOrDash(resume.resumed.stream.resultMs)}`,
    );
    for (const [check, ok] of Object.entries(resume.checks))
      console.log(`     ${ok ? 'PASS' : 'FAIL'}  ${check}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function main(): Promise<number | 'serving'> {
  const { values } = parseArgs({
    options: {
      'size-mb': { type: 'string', default: '10' },
      out: { type: 'string', default: 'bench/out/stream-ingest.json' },
      'timeout-min': { type: 'string', default: '30' },
      interrupt: { type: 'boolean', default: false },
      seed: { type: 'string', default: '42' },
      'part-kib': { type: 'string', default: '1024' },
      'dry-run': { type: 'boolean', default: false },
      'save-doc': { type: 'string' },
      'serve-child': { type: 'string' },
    },
  });
  if (values['serve-child'] !== undefined) {
    await serveChild(values['serve-child']);
    return 'serving';
  }
  const sizeMb = Number(values['size-mb']);
  const timeoutMin = Number(values['timeout-min']);
  const seed = Number(values.seed);
  const partBytes = Number(values['part-kib']) * 1024;
  if (!(sizeMb > 0 && sizeMb <= 64)) throw new Error('--size-mb: a number in (0, 64]');
  if (!(timeoutMin > 0)) throw new Error('--timeout-min: a positive number');
  if (!Number.isInteger(seed)) throw new Error('--seed: an integer');
  if (!Number.isInteger(partBytes) || partBytes < 1 || partBytes > MAX_PART_BYTES)
    throw new Error('--part-kib: an integer from 1 to 1024');

  const startedAt = new Date().toISOString();
  const loadAtStart = loadAverage();
  console.log(`machine: ${JSON.stringify(machine())}; load average ${loadAtStart.join(' ')}`);
  const generated = performance.now();
  const { text, stats } = generateMarkdown(Math.round(sizeMb * MIB), seed);
  const content = new TextEncoder().encode(text);
  console.log(
    `[generate] ${fmt(stats.bytes)} bytes, ${fmt(stats.codePoints)} code points in ${((performance.now() - generated) / 1000).toFixed(1)} s`,
  );
  if (values['save-doc'] !== undefined) writeFileSync(resolve(WORKSPACE, values['save-doc']), content);
  if (values['dry-run']) {
    console.log(JSON.stringify(stats, null, 2));
    return 0;
  }

  const began = performance.now();
  const deadline = began + timeoutMin * 60_000;
  const server = await startServer('main', 'on');
  console.log(`[server] all-in-one on ${server.url}, data in ${server.dataDir}`);
  let run: MeasuredRun;
  let chunks: ChunkSummary | undefined;
  let stopped: string;
  try {
    run = await measuredRun(server, content, partBytes, deadline);
    if (run.stream.result !== undefined)
      chunks = await chunkSummary(server, 'bench', run.stream.result.document.name);
  } finally {
    stopped = await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
  if (stopped !== 'stopped')
    console.log('[server] shutdown did not finish within 20 s (indexer busy); moved on');

  let resume: ResumeCheck | undefined;
  if (values.interrupt && run.stream.result !== undefined && chunks !== undefined) {
    resume = await resumeCheck(content, partBytes, { document: run.stream.result.document, chunks });
  }

  const count = run.stream.result?.document.chunkCount ?? 0;
  const report = {
    benchmark: 'stream-ingest',
    command: `npm run bench:stream-ingest -- ${process.argv.slice(2).join(' ')}`.trim().replace(/ --$/, ''),
    date: startedAt,
    gitCommit: gitCommit(),
    machine: machine(),
    loadAverage: { start: loadAtStart, end: loadAverage() },
    runtimeSeconds: round1((performance.now() - began) / 1000),
    settings: { sizeMb, seed, partBytes, timeoutMin, pollMs: POLL_MS, interrupt: values.interrupt },
    document: stats,
    stream: run.stream,
    progressIntervalsMs: intervals(run.stream.events),
    milestonesMs: run.milestones,
    rates: rates(run, count),
    server: serverTimeline(run.stream, chunks),
    chunks,
    timedOut: run.timedOut,
    lastSample: run.samples.at(-1),
    peakRssMib: run.peakRssMib,
    serverShutdown: stopped,
    samples: run.samples,
    ...(resume === undefined ? {} : { resume }),
  };
  printReport(stats, run, chunks, resume);
  const out = resolve(WORKSPACE, values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(
    `\nruntime ${report.runtimeSeconds} s; load average ${report.loadAverage.end.join(' ')}; wrote ${out}`,
  );
  if (run.stream.result === undefined) return 1;
  if (resume !== undefined && !resume.passed) return 1;
  return run.timedOut ? 2 : 0;
}

let code: number | 'serving' = 1;
try {
  code = await main();
} catch (error) {
  console.error(error);
}
// Connections and, after a timeout, a busy indexer may still hold the event loop: exit explicitly
// (except as the server child, which runs until it is stopped).
if (code !== 'serving') process.exit(code);
