/**
 * Replays LoCoMo conversations turn by turn into a session and checks where MemCells close.
 *
 *   npm run replay:locomo -- [--data ../shared/bench-data/locomo10.json] [--conversations 0]
 *     [--wait-extraction-s 0] [--out bench/out/locomo-replay.json]
 *
 * Starts the all-in-one server on embedded defaults in a temporary data directory and talks to it
 * over gRPC (HTTP/2). For each chosen conversation: one session (time zone UTC), then one
 * `AppendMessages` call per turn, with `occur_time` = the session's start
 * (`session_N_date_time`, e.g. "1:56 pm on 8 May, 2023") + 30 s per turn; speaker A is the USER,
 * speaker B the ASSISTANT, each with `participant_name`. After the last turn, `FlushSession`.
 *
 * Checks, printed and written as JSON:
 * - every LoCoMo session boundary is a MemCell boundary: DATE_CHANGE where the sessions fall on
 *   different calendar days, TIME_GAP otherwise (a session starts more than 30 minutes later);
 * - no MemCell spans two LoCoMo sessions; other boundaries (MESSAGE_CAP, TOPIC_SHIFT) are counted;
 * - the MemCells cover every message once, without gaps;
 * - with `--wait-extraction-s N`, how many MemCells reached EXTRACTED / FAILED / PENDING within N s.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createAllInOneServer, loadConfig } from '@engram/all-in-one';
import {
  BoundaryReason,
  IngestionService,
  MemCellStatus,
  MessageRole,
  type MemCell,
} from '@engram/contracts/ingestion';
import { mintToken } from '@engram/runtime';
import { parseLocomoDate } from './lib/locomo.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: resolve(WORKSPACE, '../shared/bench-data/locomo10.json') },
    conversations: { type: 'string', default: '0' },
    'wait-extraction-s': { type: 'string', default: '0' },
    out: { type: 'string', default: resolve(WORKSPACE, 'bench/out/locomo-replay.json') },
  },
});

interface Turn {
  readonly speaker: string;
  readonly text: string;
  readonly blip_caption?: string;
}
interface Sample {
  readonly sample_id?: string;
  readonly conversation: Record<string, unknown>;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

async function main(): Promise<void> {
  const samples = JSON.parse(readFileSync(args.data, 'utf8')) as Sample[];
  const chosen = args.conversations.split(',').map(Number);
  const waitS = Number(args['wait-extraction-s']);
  const dataDir = mkdtempSync(join(tmpdir(), 'engram-replay-'));
  const secret = randomBytes(32).toString('hex');
  const { server } = await createAllInOneServer(
    loadConfig({
      ENGRAM_PORT: '0',
      ENGRAM_JWT_SECRET: secret,
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_LOG_LEVEL: 'warn',
    }),
    { handleSignals: false },
  );
  const client = createClient(IngestionService, createGrpcTransport({ baseUrl: server.url }));
  const token = await mintToken(
    { subject: 'replay', tenantId: 'bench' },
    { algorithm: 'HS256', secret: new TextEncoder().encode(secret) },
  );
  const headers = { authorization: `Bearer ${token}` };
  const results = [];
  try {
    for (const index of chosen) {
      const sample = samples[index];
      if (sample === undefined) throw new Error(`no conversation ${index}`);
      const c = sample.conversation;
      const speakerA = String(c['speaker_a']);
      const { session } = await client.createSession(
        { session: { displayName: `LoCoMo ${sample.sample_id ?? index}`, timeZone: 'UTC' } },
        { headers },
      );
      if (session === undefined) throw new Error('no session');
      // Sequence ranges of the LoCoMo sessions, and the boundary each one should produce.
      const sessions: { n: number; first: number; last: number; start: number }[] = [];
      let sequence = 0;
      const started = performance.now();
      for (let n = 1; Array.isArray(c[`session_${n}`]); n++) {
        const turns = c[`session_${n}`] as Turn[];
        const start = parseLocomoDate(String(c[`session_${n}_date_time`]));
        if (turns.length === 0) continue;
        sessions.push({ n, first: sequence + 1, last: sequence + turns.length, start });
        for (const [i, turn] of turns.entries()) {
          const content =
            turn.blip_caption === undefined ? turn.text : `${turn.text} [image: ${turn.blip_caption}]`;
          await client.appendMessages(
            {
              parent: session.name,
              messages: [
                {
                  role: turn.speaker === speakerA ? MessageRole.USER : MessageRole.ASSISTANT,
                  participantName: turn.speaker.replace(/[^A-Za-z0-9_-]/g, '_'),
                  content,
                  occurTime: timestampFromMs(start + i * 30_000),
                },
              ],
            },
            { headers },
          );
        }
        sequence += turns.length;
      }
      const appendMs = performance.now() - started;
      await client.flushSession({ name: session.name, reason: 'replay finished' }, { headers });

      const listCells = async () => {
        const cells: MemCell[] = [];
        let pageToken = '';
        do {
          const page = await client.listMemCells(
            { parent: session.name, pageSize: 500, pageToken },
            { headers },
          );
          cells.push(...page.memCells);
          pageToken = page.nextPageToken;
        } while (pageToken !== '');
        return cells;
      };
      let cells = await listCells();
      const waitUntil = Date.now() + waitS * 1000;
      const final = (cell: MemCell) =>
        cell.status === MemCellStatus.EXTRACTED || cell.status === MemCellStatus.FAILED;
      while (Date.now() < waitUntil && !cells.every(final)) {
        await new Promise((r) => setTimeout(r, 1000));
        cells = await listCells();
      }

      // Coverage: consecutive, no gaps, every message once.
      let expectedFirst = 1;
      let gaps = 0;
      for (const cell of cells) {
        if (Number(cell.firstSequence) !== expectedFirst) gaps += 1;
        expectedFirst = Number(cell.lastSequence) + 1;
      }
      const covered = expectedFirst - 1 === sequence;
      const ends = new Map(cells.map((cell) => [Number(cell.lastSequence), cell]));
      const boundaries = sessions.slice(0, -1).map((s, i) => {
        const next = sessions[i + 1]!;
        const expected = day(next.start) !== day(s.start) ? 'DATE_CHANGE' : 'TIME_GAP';
        const cell = ends.get(s.last);
        return {
          afterSession: s.n,
          expected,
          found: cell === undefined ? 'none' : BoundaryReason[cell.boundaryReason],
        };
      });
      const crossing = cells.filter((cell) =>
        sessions.some((s) => Number(cell.firstSequence) <= s.last && Number(cell.lastSequence) > s.last),
      ).length;
      const byReason: Record<string, number> = {};
      const byStatus: Record<string, number> = {};
      for (const cell of cells) {
        const reason = BoundaryReason[cell.boundaryReason];
        const status = MemCellStatus[cell.status];
        byReason[reason] = (byReason[reason] ?? 0) + 1;
        byStatus[status] = (byStatus[status] ?? 0) + 1;
      }
      const result = {
        conversation: sample.sample_id ?? index,
        turns: sequence,
        locomoSessions: sessions.length,
        memCells: cells.length,
        sessionBoundaries: boundaries.length,
        boundariesMatched: boundaries.filter((b) => b.expected === b.found).length,
        mismatches: boundaries.filter((b) => b.expected !== b.found),
        cellsCrossingSessions: crossing,
        coverage: { covered, gaps },
        byReason,
        byStatus,
        appendMsPerTurn: Math.round((appendMs / sequence) * 100) / 100,
      };
      results.push(result);
      process.stdout.write(
        `${String(result.conversation).padEnd(10)} turns ${String(result.turns).padStart(4)}  sessions ${String(
          result.locomoSessions,
        ).padStart(2)}  cells ${String(result.memCells).padStart(3)}  session boundaries matched ${
          result.boundariesMatched
        }/${result.sessionBoundaries}  crossing ${crossing}  covered ${String(covered)}  ` +
          `reasons ${JSON.stringify(byReason)}  statuses ${JSON.stringify(byStatus)}  append ${
            result.appendMsPerTurn
          } ms/turn\n`,
      );
    }
  } finally {
    await server.shutdown();
    rmSync(dataDir, { recursive: true, force: true });
  }
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, `${JSON.stringify({ data: args.data, results }, null, 2)}\n`);
  const bad = results.some(
    (r) => r.boundariesMatched !== r.sessionBoundaries || r.cellsCrossingSessions > 0 || !r.coverage.covered,
  );
  if (bad) process.exitCode = 1;
}

await main();
