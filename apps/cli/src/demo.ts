/**
 * `npm run demo` (issue 9): a guided tour of Engram on a bundled sample written for the project
 * (apps/cli/demo). It ingests a small Markdown document and a bilingual conversation spread over
 * four days, then prints the memories governance extracted with every decision (including a
 * rejected secret), a search with its score explanations, and an assembled context with its
 * trace.
 *
 * It talks to the server at ENGRAM_ADDR (default http://127.0.0.1:50051); when nothing answers
 * there it starts the all-in-one server itself (the `npm start` entry point) on a free port in a
 * temporary data directory, and stops it at the end. Every run uses a fresh user, so reruns
 * against the same server start clean. Works with no network and no API key.
 *
 * Where the `engram` CLI has the command (ingest, memories list, search --explain, context) the
 * demo runs it as a child process and prints its output, so the tour doubles as the CLI's
 * showcase; the rest (messages with past times, extraction jobs, proposals) goes over gRPC.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { durationFromMs, timestampDate, timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type Interceptor,
  type Transport,
} from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ItemKind } from '@engram/contracts/common';
import {
  ContextLayer,
  ContextService,
  ChatRole,
  TraceItemKind,
  TraceReason,
  LayerStatus,
} from '@engram/contracts/context';
import {
  DecisionOutcome,
  ExtractionJobState,
  ExtractionJobView,
  GovernanceService,
  MemoryStatus,
  MemoryType,
  RuleVerdict,
  SourceKind,
  type CandidateMemory,
  type Decision,
  type ExtractionJob,
  type Memory,
} from '@engram/contracts/governance';
import { Health, HealthCheckResponse_ServingStatus } from '@engram/contracts/grpc';
import {
  BoundaryReason,
  ChunkKind,
  IngestionService,
  MemCellStatus,
  MessageRole,
  type MemCell,
} from '@engram/contracts/ingestion';
import { RetrievalService, type SearchResult } from '@engram/contracts/retrieval';
import { mintToken, readLocalSecret } from '@engram/runtime';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const sampleDir = join(repoRoot, 'apps/cli/demo');

/** How long the demo waits for a server it started, and for extraction (first model load included). */
const SERVER_START_TIMEOUT_MS = 180_000;
const EXTRACTION_TIMEOUT_MS = 180_000;
const CONTEXT_BUDGET_TOKENS = 1_500;

// ---------------------------------------------------------------------------------------------
// The sample

interface SampleMessage {
  readonly time: string;
  readonly role: 'user' | 'assistant';
  readonly content: string;
}
interface SampleDay {
  readonly day: number;
  readonly messages: readonly SampleMessage[];
}
interface SampleConversation {
  readonly title: string;
  readonly timeZone: string;
  readonly days: readonly SampleDay[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function isSampleMessage(m: unknown): m is SampleMessage {
  return (
    isRecord(m) &&
    typeof m['time'] === 'string' &&
    /^\d{2}:\d{2}$/.test(m['time']) &&
    (m['role'] === 'user' || m['role'] === 'assistant') &&
    typeof m['content'] === 'string'
  );
}

function isSampleDay(d: unknown): d is SampleDay {
  return (
    isRecord(d) &&
    Number.isInteger(d['day']) &&
    Array.isArray(d['messages']) &&
    d['messages'].every(isSampleMessage)
  );
}

function loadConversation(): SampleConversation {
  const file = join(sampleDir, 'conversation.json');
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (
    !isRecord(parsed) ||
    typeof parsed['title'] !== 'string' ||
    typeof parsed['timeZone'] !== 'string' ||
    !Array.isArray(parsed['days']) ||
    !parsed['days'].every(isSampleDay)
  )
    throw new Error(`${file} is not a valid demo conversation`);
  return { title: parsed['title'], timeZone: parsed['timeZone'], days: parsed['days'] };
}

/** The wall-clock fields of instant `ms` in `timeZone`. */
function zonedFields(ms: number, timeZone: string) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value);
  return {
    year: get('year'),
    month: get('month'),
    day: get('day'),
    hour: get('hour'),
    minute: get('minute'),
    second: get('second'),
  };
}

/** The instant at local `hh:mm` on the calendar day `daysFromToday` from today in `timeZone`. */
function localInstant(daysFromToday: number, time: string, timeZone: string): number {
  const today = zonedFields(Date.now(), timeZone);
  const [hh, mm] = time.split(':').map(Number) as [number, number];
  const wall = Date.UTC(today.year, today.month - 1, today.day + daysFromToday, hh, mm);
  const offsetAt = (ms: number) => {
    const f = zonedFields(ms, timeZone);
    return Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second) - Math.floor(ms / 1000) * 1000;
  };
  // Two passes settle the offset on either side of a daylight-saving change.
  const first = wall - offsetAt(wall);
  return wall - offsetAt(first);
}

function localDateTime(ms: number, timeZone: string): string {
  const f = zonedFields(ms, timeZone);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${String(f.year)}-${pad(f.month)}-${pad(f.day)} ${pad(f.hour)}:${pad(f.minute)}`;
}

// ---------------------------------------------------------------------------------------------
// Printing

const out = (line = '') => process.stdout.write(`${line}\n`);

function section(n: number, title: string): void {
  out();
  out('='.repeat(100));
  out(`${String(n)}. ${title}`);
  out('='.repeat(100));
}

/** Terminal columns of `text`: East Asian wide characters take two. */
function displayWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    const wide =
      (cp >= 0x1100 && cp <= 0x115f) ||
      (cp >= 0x2e80 && cp <= 0xa4cf) ||
      (cp >= 0xac00 && cp <= 0xd7a3) ||
      (cp >= 0xf900 && cp <= 0xfaff) ||
      (cp >= 0xfe30 && cp <= 0xfe4f) ||
      (cp >= 0xff00 && cp <= 0xff60) ||
      (cp >= 0xffe0 && cp <= 0xffe6);
    width += wide ? 2 : 1;
  }
  return width;
}

/** `text` on one line, cut to `max` columns with an ellipsis. */
function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (displayWidth(flat) <= max) return flat;
  let result = '';
  for (const ch of flat) {
    if (displayWidth(result + ch) > max - 1) break;
    result += ch;
  }
  return `${result}…`;
}

function padEnd(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

function table(headers: readonly string[], rows: readonly (readonly string[])[], indent = '  '): void {
  const widths = headers.map((h, i) =>
    Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ''))),
  );
  const line = (cells: readonly string[]) =>
    `${indent}${cells.map((c, i) => padEnd(c, widths[i] ?? 0)).join('  ')}`.trimEnd();
  out(line(headers));
  out(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) out(line(row));
}

const num = (value: number | undefined, digits = 3) => (value === undefined ? '–' : value.toFixed(digits));
const enumName = (names: Record<number, string>, value: number) => names[value] ?? String(value);
const memoryType = (t: MemoryType) => enumName(MemoryType, t);
const slot = (m: { namespace: string; key: string }) => (m.namespace !== '' ? `${m.namespace}/${m.key}` : '');

/** What the resources the demo created say, by name, so that the context trace reads as text. */
const labels = new Map<string, string>();

// ---------------------------------------------------------------------------------------------
// The server

interface LocalServer {
  readonly child: ChildProcess;
  readonly dataDir: string;
  readonly url: string;
  readonly log: () => string;
  readonly exited: Promise<number | null>;
}

function authInterceptor(token: () => string | undefined): Interceptor {
  return (next) => (req) => {
    const value = token();
    if (value !== undefined) req.header.set('authorization', `Bearer ${value}`);
    return next(req);
  };
}

async function healthStatus(transport: Transport): Promise<HealthCheckResponse_ServingStatus | undefined> {
  try {
    const response = await createClient(Health, transport).check({ service: '' }, { timeoutMs: 2_000 });
    return response.status;
  } catch {
    return undefined;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolvePort(port);
      });
    });
  });
}

/**
 * Starts the all-in-one server the way `npm start` does (same entry point and loader), but on
 * embedded defaults in a fresh temporary data directory. Node is spawned directly rather than
 * through npm so that SIGTERM reaches the server itself.
 */
async function startServer(): Promise<LocalServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'engram-demo-'));
  const port = await freePort();
  // Embedded defaults: no external database, index or shared secret from the caller's shell.
  const inherited = new Set([
    'MYSQL_URL',
    'QDRANT_URL',
    'QDRANT_API_KEY',
    'ENGRAM_JWT_SECRET',
    'ENGRAM_JWT_SECRET_FILE',
  ]);
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !inherited.has(name))),
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_PORT: String(port),
    ENGRAM_HOST: '127.0.0.1',
    ENGRAM_AUTH_MODE: 'hs256',
    // A free metrics port: the default one may belong to a server already running on this host.
    ENGRAM_METRICS_PORT: '0',
  };
  const child = spawn(
    process.execPath,
    ['--conditions=@engram/source', '--import', 'tsx', 'services/all-in-one/src/main.ts'],
    { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((l) => l !== ''),
    );
    if (lines.length > 40) lines.splice(0, lines.length - 40);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolveExit) => {
    child.once('exit', (code) => {
      resolveExit(code);
    });
  });
  return { child, dataDir, url: `http://127.0.0.1:${String(port)}`, log: () => lines.join('\n'), exited };
}

async function waitUntilServing(server: LocalServer): Promise<void> {
  const transport = createGrpcTransport({ baseUrl: server.url });
  const deadline = Date.now() + SERVER_START_TIMEOUT_MS;
  let exitCode: number | null | undefined;
  void server.exited.then((code) => (exitCode = code));
  while (Date.now() < deadline) {
    if (exitCode !== undefined)
      throw new Error(`the server exited with ${String(exitCode)} before serving:\n${server.log()}`);
    if ((await healthStatus(transport)) === HealthCheckResponse_ServingStatus.SERVING) return;
    await sleep(250);
  }
  throw new Error(
    `the server did not report SERVING within ${String(SERVER_START_TIMEOUT_MS / 1000)} s:\n${server.log()}`,
  );
}

async function stopServer(server: LocalServer): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 15_000);
    await server.exited;
    clearTimeout(timer);
  }
  rmSync(server.dataDir, { recursive: true, force: true });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A bearer token for `user`: ENGRAM_TOKEN as given, else minted from the server's local secret. */
async function tokenFor(user: string, dataDir: string): Promise<{ token: string; how: string }> {
  const given = process.env['ENGRAM_TOKEN'];
  if (given !== undefined && given !== '') return { token: given, how: 'ENGRAM_TOKEN' };
  const fromEnv = process.env['ENGRAM_JWT_SECRET'];
  const secret =
    fromEnv !== undefined && fromEnv !== '' ? new TextEncoder().encode(fromEnv) : readLocalSecret(dataDir);
  if (secret === undefined) {
    throw new Error(
      `no token: set ENGRAM_TOKEN (e.g. ENGRAM_TOKEN=$(npm run -s token -- --user ${user})), or run the demo ` +
        `where the server keeps its secret (ENGRAM_DATA_DIR, default .engram)`,
    );
  }
  const token = await mintToken(
    { subject: user, tenantId: 'local', orgIds: [], roles: [] },
    { algorithm: 'HS256', secret },
    { expiresIn: '1h' },
  );
  return {
    token,
    how: `minted for user ${user} from ${fromEnv !== undefined ? 'ENGRAM_JWT_SECRET' : 'the local secret'}`,
  };
}

// ---------------------------------------------------------------------------------------------
// The engram CLI, shown in action where it has the command

/** Address and token of the demo user, for the `engram` child processes. */
let cliTarget: { readonly addr: string; readonly token: string } | undefined;

function runCli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  if (cliTarget === undefined) throw new Error('the CLI target is not set');
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'ENGRAM_USER')),
    ENGRAM_ADDR: cliTarget.addr,
    ENGRAM_TOKEN: cliTarget.token,
    NO_COLOR: '1',
  };
  const child = spawn(
    process.execPath,
    ['--conditions=@engram/source', '--import', 'tsx', 'apps/cli/src/main.ts', ...args],
    { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolveRun, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      resolveRun({ code, stdout, stderr });
    });
  });
}

const shellWord = (arg: string) =>
  /^[\w@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, '\\$1')}"`;

/**
 * Runs `engram <args>` against the demo's server as the demo user and prints the command and its
 * output. Returns false (after saying so) when the command failed, so that the caller can show
 * the same through the API instead.
 */
async function engram(args: readonly string[]): Promise<boolean> {
  out(`  $ engram ${args.map(shellWord).join(' ')}`);
  const { code, stdout, stderr } = await runCli(args);
  for (const line of stdout.trimEnd().split('\n')) out(`  ${line}`.trimEnd());
  if (code === 0) return true;
  out(
    `  (engram CLI failed with exit code ${String(code)}: ${clip(stderr, 200)}; showing the API response instead)`,
  );
  return false;
}

// ---------------------------------------------------------------------------------------------
// The tour

interface Clients {
  readonly ingestion: Client<typeof IngestionService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly context: Client<typeof ContextService>;
}

async function ingestNotes(clients: Clients): Promise<void> {
  section(1, 'Ingest a Markdown document (apps/cli/demo/notes.md)');
  let name: string | undefined;
  if (await engram(['ingest', 'apps/cli/demo/notes.md'])) {
    const { documents } = await clients.ingestion.listDocuments({ ownedByCaller: true, pageSize: 10 });
    name = documents[0]?.name;
  } else {
    const content = readFileSync(join(sampleDir, 'notes.md'));
    const response = await clients.ingestion.ingestDocument({
      document: { mimeType: 'text/markdown', displayName: 'notes.md', sourceUri: 'apps/cli/demo/notes.md' },
      content,
      waitForIndex: true,
    });
    name = response.document?.name;
    out(
      `  ${name ?? ''}: ${String(response.chunksWritten)} chunks, index ${response.indexComplete ? 'complete' : 'catching up'}`,
    );
  }
  if (name === undefined) throw new Error('the document was not ingested');
  out();
  out(`  Its chunks (ListChunks ${name}): headings are kept as a path, the table stays whole`);
  const chunks = await clients.ingestion.listChunks({ parent: name, pageSize: 50 });
  for (const c of chunks.chunks) labels.set(c.name, `notes.md: ${c.text}`);
  table(
    ['#', 'kind', 'tokens', 'heading path', 'text'],
    chunks.chunks.map((c) => [
      String(c.ordinal),
      enumName(ChunkKind, c.kind),
      String(c.tokenCount),
      c.headingPath.join(' › '),
      clip(c.text, 60),
    ]),
  );
}

async function appendConversation(
  clients: Clients,
  conversation: SampleConversation,
): Promise<{ session: string; cells: MemCell[] }> {
  section(2, 'Append a bilingual conversation over four days, then flush');
  const created = await clients.ingestion.createSession({
    session: { displayName: conversation.title, timeZone: conversation.timeZone },
  });
  const session = created.session?.name ?? '';
  out(`  ${session}  "${conversation.title}"  time zone ${conversation.timeZone}`);
  const lastDay = Math.max(...conversation.days.map((d) => d.day));
  const tz = conversation.timeZone;
  for (const day of conversation.days) {
    // The last day of the sample is yesterday, so every message lies in the past.
    const offset = day.day - lastDay - 1;
    out();
    out(`  Day ${String(day.day)} (${localDateTime(localInstant(offset, '00:00', tz), tz).slice(0, 10)})`);
    const response = await clients.ingestion.appendMessages({
      parent: session,
      messages: day.messages.map((m) => ({
        role: m.role === 'user' ? MessageRole.USER : MessageRole.ASSISTANT,
        content: m.content,
        occurTime: timestampFromMs(localInstant(offset, m.time, tz)),
      })),
    });
    for (const cell of response.closedMemCells)
      out(`    ⤷ ${describeCell(cell)} closed: the calendar day changed`);
    response.messages.forEach((stored, i) => {
      const sent = day.messages[i];
      labels.set(stored.name, `${sent?.role ?? ''}: ${stored.content}`);
      out(
        `    #${String(stored.sequence).padEnd(3)}${sent?.time ?? ''}  ${padEnd(sent?.role ?? '', 9)} ${stored.content}`,
      );
      if (sent !== undefined && stored.content !== sent.content)
        out('          ↳ stored redacted: ingestion removed a secret before storing the message');
    });
  }
  out();
  out('  FlushSession(wait_for_extraction) closes the last day and waits for its extraction…');
  const flushed = await clients.ingestion.flushSession({
    name: session,
    reason: 'demo: end of the conversation',
    waitForExtraction: true,
    extractionWaitTimeout: durationFromMs(EXTRACTION_TIMEOUT_MS),
  });
  if (flushed.memCell !== undefined) out(`    ⤷ ${describeCell(flushed.memCell)} closed by the flush`);
  const cells = await waitForExtraction(clients, session);
  out();
  table(
    ['MemCell', 'messages', 'boundary', 'status', 'extraction job'],
    cells.map((c) => [
      c.name.split('/').pop() ?? c.name,
      `${String(c.firstSequence)}–${String(c.lastSequence)}`,
      enumName(BoundaryReason, c.boundaryReason),
      enumName(MemCellStatus, c.status),
      c.extractionJob,
    ]),
  );
  return { session, cells };
}

function describeCell(cell: MemCell): string {
  return `MemCell of messages ${String(cell.firstSequence)}–${String(cell.lastSequence)} (${enumName(BoundaryReason, cell.boundaryReason)})`;
}

/** Waits until every MemCell of the session has finished extraction (EXTRACTED or FAILED). */
async function waitForExtraction(clients: Clients, session: string): Promise<MemCell[]> {
  const deadline = Date.now() + EXTRACTION_TIMEOUT_MS;
  for (;;) {
    const { memCells } = await clients.ingestion.listMemCells({ parent: session, pageSize: 100 });
    const done = memCells.every(
      (c) => c.status === MemCellStatus.EXTRACTED || c.status === MemCellStatus.FAILED,
    );
    if (done && memCells.length > 0)
      return [...memCells].sort((a, b) => Number(a.firstSequence - b.firstSequence));
    if (Date.now() > deadline)
      throw new Error(`extraction did not finish within ${String(EXTRACTION_TIMEOUT_MS / 1000)} s`);
    await sleep(300);
  }
}

function decisionRow(decision: Decision, candidate: CandidateMemory | undefined): string[] {
  const type = candidate !== undefined ? memoryType(candidate.type) : '';
  const text = decision.memory?.text ?? candidate?.text ?? '';
  return [
    enumName(DecisionOutcome, decision.outcome),
    type,
    candidate !== undefined ? slot(candidate) : '',
    candidate?.confidence !== undefined ? candidate.confidence.toFixed(2) : '',
    clip(text, 56),
    clip(why(decision), 64),
  ];
}

/** The rule that decided, or for an accepted candidate the rules that changed it on the way. */
function why(decision: Decision): string {
  if (decision.outcome !== DecisionOutcome.ACCEPTED)
    return [decision.rule, decision.reason].filter((s) => s !== '').join(': ');
  const notable = decision.evaluations.filter(
    (e) => e.verdict !== RuleVerdict.PASSED && e.verdict !== RuleVerdict.NOT_EVALUATED,
  );
  if (notable.length === 0) return `all ${String(decision.evaluations.length)} hard rules passed`;
  return notable.map((e) => `${e.rule} ${enumName(RuleVerdict, e.verdict)}: ${e.note}`).join('; ');
}

async function showGovernance(clients: Clients, session: string, cells: readonly MemCell[]): Promise<void> {
  section(3, 'Memories extracted, with the governance decision on every candidate');
  const { extractionJobs } = await clients.governance.listExtractionJobs({
    session,
    view: ExtractionJobView.FULL,
    pageSize: 100,
  });
  const byCell = new Map<string, ExtractionJob[]>();
  for (const job of extractionJobs) byCell.set(job.memCell, [...(byCell.get(job.memCell) ?? []), job]);
  for (const cell of cells) {
    for (const job of byCell.get(cell.name) ?? []) {
      const counts = job.decisionCounts;
      out();
      out(
        `  ${describeCell(cell)} → ${job.name}: ${enumName(ExtractionJobState, job.state)}, ` +
          `${String(job.candidates.length)} candidates (accepted ${String(counts?.accepted ?? 0)}, ` +
          `superseded ${String(counts?.superseded ?? 0)}, duplicate ${String(counts?.mergedDuplicate ?? 0)}, ` +
          `rejected ${String(counts?.rejected ?? 0)}, quarantined ${String(counts?.quarantined ?? 0)})`,
      );
      if (job.decisions.length > 0)
        table(
          ['outcome', 'type', 'slot', 'conf.', 'text', 'rule: reason'],
          job.decisions.map((d) => decisionRow(d, job.candidates[d.candidateIndex])),
          '    ',
        );
    }
  }

  const { memories } = await clients.governance.listMemories({
    statuses: [MemoryStatus.ACTIVE],
    pageSize: 100,
  });
  for (const m of memories) labels.set(m.name, `${memoryType(m.type)}: ${m.text}`);
  out();
  out(`  The memories now stored for this user (${String(memories.length)} ACTIVE):`);
  if (!(await engram(['memories', 'list'])))
    table(
      ['type', 'slot', 'evergreen', 'conf.', 'occurred', 'text'],
      memories.map((m: Memory) => [
        memoryType(m.type),
        slot(m),
        m.evergreen ? 'yes' : '',
        m.confidence !== undefined ? m.confidence.toFixed(2) : '',
        m.occurTime !== undefined ? timestampDate(m.occurTime).toISOString().slice(0, 10) : '',
        clip(m.text, 70),
      ]),
    );

  out();
  out('  A secret never becomes a memory. Ingestion redacted the pasted API key in the message above;');
  out('  proposing it to governance directly as a memory is rejected by the hard rules:');
  const { decisions } = await clients.governance.proposeMemories({
    candidates: [
      {
        type: MemoryType.FACT,
        namespace: 'profile',
        key: 'weather_api_key',
        value: { api_key: 'sk-DEMO4engram7notReal2026TrekXyz' },
        text: 'The weather API key of the user is sk-DEMO4engram7notReal2026TrekXyz',
        sourceKind: SourceKind.EXPLICIT_USER_STATEMENT,
        confidence: 0.9,
      },
    ],
    languageCode: 'en',
  });
  const [decision] = decisions;
  if (decision === undefined) throw new Error('ProposeMemories returned no decision');
  out(
    `    ProposeMemories(FACT profile/weather_api_key) → ${enumName(DecisionOutcome, decision.outcome)} ` +
      `by rule ${decision.rule}: ${decision.reason}`,
  );
  for (const e of decision.evaluations)
    out(`      ${padEnd(e.rule, 22)} ${padEnd(enumName(RuleVerdict, e.verdict), 14)} ${e.note}`);
}

function resultText(result: SearchResult): { what: string; text: string } {
  switch (result.item.case) {
    case 'memory': {
      const m = result.item.value;
      return { what: `${memoryType(m.type)} ${slot(m)}`.trim(), text: m.text };
    }
    case 'chunk':
      return {
        what: `chunk of ${result.document?.displayName ?? 'a document'}`,
        text: result.item.value.text,
      };
    case 'round':
      return { what: 'conversation round', text: result.item.value.text };
    default:
      return { what: '', text: '' };
  }
}

async function showSearch(clients: Clients): Promise<void> {
  section(4, 'Hybrid search with explanations (Search, explain: true)');
  for (const query of ['徒步要带什么装备？', 'What is my running goal before the trip?']) {
    out();
    if (await engram(['search', '--explain', '--top-k', '5', query])) continue;
    const response = await clients.retrieval.search({ query, topK: 5, explain: true });
    const stats = response.stats;
    out(`  Query: "${query}"`);
    if (stats !== undefined)
      out(
        `  candidates: ${String(stats.denseCandidates)} dense, ${String(stats.lexicalCandidates)} lexical, ` +
          `${String(stats.mergedCandidates)} merged · model ${stats.embeddingModel} · ${String(stats.queryTerms)} query terms` +
          (stats.degraded ? ` · DEGRADED: ${stats.degradedMessage}` : ''),
      );
    for (const r of response.results) {
      const { what, text } = resultText(r);
      const b = r.breakdown;
      out(
        `  #${String(r.rank)}  ${enumName(ItemKind, r.kind).padEnd(6)} score ${r.score.toFixed(3)}  ${what}`,
      );
      out(`      ${clip(text, 90)}`);
      if (b !== undefined) {
        const terms = b.matchedTerms.length > 0 ? `, terms ${b.matchedTerms.join(' ')}` : '';
        out(
          `      dense ${num(b.vectorNormalized)} (cosine ${num(b.vectorRaw)}, rank ${String(b.denseRank)}) + ` +
            `lexical ${num(b.textNormalized)} (BM25 ${num(b.textRaw)}, rank ${String(b.lexicalRank)}${terms})`,
        );
        out(
          `      → fused ${num(b.fused)} × window ${num(b.timeWindowFactor)} × recency ${num(b.recencyMultiplier)} (age ${b.ageDays.toFixed(1)} d) = score ${num(b.finalScore)}` +
            ` · MMR: similarity to earlier results ${num(b.maxSimilarity)}, penalty ${num(b.mmrPenalty)}, picked with ${num(b.mmrScore)}`,
        );
      }
    }
  }
}

async function showContext(clients: Clients, session: string): Promise<void> {
  section(
    5,
    `Assembled context for the next turn (BuildContext, budget ${String(CONTEXT_BUDGET_TOKENS)} tokens)`,
  );
  // Preferences, profile facts and goals the user stated are evergreen: governance marks them when
  // it extracts them, and the context puts them into every turn (EVERGREEN_FACTS).
  const { memories: facts } = await clients.governance.listMemories({ evergreenOnly: true, pageSize: 100 });
  for (const fact of facts) out(`  Evergreen (in every context): ${slot(fact)} "${fact.text}"`);
  const userMessage = 'What should I pack for the trek, and how far along is my running goal?';
  const systemPrompt = 'You are a helpful trip-planning assistant.';
  out();
  const budget = String(CONTEXT_BUDGET_TOKENS);
  const args = [
    'context',
    '--session',
    session,
    '--budget',
    budget,
    '--model',
    'gpt-4o',
    '--system',
    systemPrompt,
  ];
  if (await engram([...args, userMessage])) return;
  const response = await clients.context.buildContext({
    session,
    userMessage,
    model: 'gpt-4o',
    budget: { totalTokens: CONTEXT_BUDGET_TOKENS },
    systemPrompt,
    includeTrace: true,
  });
  out(`  User message: "${userMessage}"`);
  out(
    `  ${String(response.messages.length)} messages, ${String(response.totalTokens)} of ${String(response.budgetTokens)} ` +
      `tokens (tokenizer ${response.tokenizer?.encoding ?? '?'} for ${response.tokenizer?.model ?? '?'})`,
  );
  out();
  out('  Messages:');
  response.messages.forEach((m, i) => {
    const lines = m.content.split('\n');
    out(
      `  [${String(i + 1)}] ${enumName(ChatRole, m.role)} (${String(response.messageTokens[i] ?? 0)} tokens)`,
    );
    const shown = m.role === ChatRole.SYSTEM ? 30 : 4;
    for (const line of lines.slice(0, shown)) out(`      ${clip(line, 110)}`);
    if (lines.length > shown) out(`      … ${String(lines.length - shown)} more lines`);
  });
  out();
  out('  Layers:');
  table(
    ['layer', 'status', 'budget', 'used', 'included', 'dropped'],
    response.layers.map((l) => [
      enumName(ContextLayer, l.layer),
      enumName(LayerStatus, l.status),
      String(l.budgetTokens),
      String(l.usedTokens),
      String(l.itemsIncluded),
      String(l.itemsDropped),
    ]),
  );
  out();
  out('  Trace (every item considered, kept or dropped):');
  table(
    ['kind', 'layer', 'tokens', 'score', 'included', 'reason', 'item or detail'],
    response.trace.map((t) => [
      enumName(TraceItemKind, t.kind),
      enumName(ContextLayer, t.layer),
      String(t.tokens),
      t.score !== undefined ? t.score.toFixed(3) : '',
      t.included ? 'yes' : 'no',
      enumName(TraceReason, t.reason),
      clip(t.detail !== '' ? t.detail : (labels.get(t.id) ?? t.id), 60),
    ]),
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  const address = process.env['ENGRAM_ADDR'] ?? 'http://127.0.0.1:50051';
  // A fresh user per run, so that reruns against one server start from nothing.
  const user = `demo-${new Date().toISOString().replace(/\D/g, '').slice(0, 17)}`;
  out('Engram demo: a bilingual trip-planning conversation and a Markdown note (apps/cli/demo)');
  out();

  let server: LocalServer | undefined;
  const stopOnExit = () => server?.child.kill('SIGKILL');
  process.once('exit', stopOnExit);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      stopOnExit();
      if (server !== undefined) rmSync(server.dataDir, { recursive: true, force: true });
      process.exit(130);
    });

  try {
    let baseUrl = address;
    let dataDir = process.env['ENGRAM_DATA_DIR'] ?? join(repoRoot, '.engram');
    if (
      (await healthStatus(createGrpcTransport({ baseUrl: address }))) ===
      HealthCheckResponse_ServingStatus.SERVING
    ) {
      out(`Server: using the one serving at ${address}`);
    } else {
      server = await startServer();
      out(`Server: nothing serving at ${address}; starting one (npm start's entry point) at ${server.url}`);
      out(`        with a temporary data directory ${server.dataDir} (SQLite, embedded index, local model)`);
      out('        waiting for SERVING (the first start loads the embedding model)…');
      await waitUntilServing(server);
      out(`        SERVING after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      baseUrl = server.url;
      dataDir = server.dataDir;
    }
    const { token, how } = await tokenFor(user, dataDir);
    out(`User:   ${user} (token ${how})`);
    cliTarget = { addr: baseUrl, token };

    const transport = createGrpcTransport({ baseUrl, interceptors: [authInterceptor(() => token)] });
    const clients: Clients = {
      ingestion: createClient(IngestionService, transport),
      governance: createClient(GovernanceService, transport),
      retrieval: createClient(RetrievalService, transport),
      context: createClient(ContextService, transport),
    };

    await ingestNotes(clients);
    const { session, cells } = await appendConversation(clients, loadConversation());
    await showGovernance(clients, session, cells);
    await showSearch(clients);
    await showContext(clients, session);
    out();
    out(`Demo complete in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  } finally {
    if (server !== undefined) {
      out(server.child.exitCode === null ? 'Stopping the demo server…' : '');
      await stopServer(server);
    }
    process.removeListener('exit', stopOnExit);
  }
}

function describeError(error: unknown): string {
  if (error instanceof ConnectError) {
    const hint =
      error.code === Code.Unauthenticated
        ? ' (the token was refused: is ENGRAM_TOKEN or the local secret from this server?)'
        : error.code === Code.Unavailable
          ? ' (is the server still running?)'
          : '';
    return `${Code[error.code]}: ${error.rawMessage}${hint}`;
  }
  return error instanceof Error ? error.message : String(error);
}

main().catch((error: unknown) => {
  process.stderr.write(`\ndemo failed: ${describeError(error)}\n`);
  process.exitCode = 1;
});
