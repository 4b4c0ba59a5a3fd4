import { toJson } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import type { Command } from 'commander';
import {
  DecisionOutcome,
  ExtractionJobSchema,
  ExtractionJobState,
  ExtractorRunState,
  Extractor,
  MemoryType,
  RuleVerdict,
  type Decision,
  type ExtractionJob,
} from '@engram/contracts/governance';
import { MemCellStatus, MessageRole } from '@engram/contracts/ingestion';
import { action } from '../actions.js';
import type { Connection } from '../connection.js';
import type { CliRuntime } from '../context.js';
import { enumLabel, memoryContent, oneLine, renderTable } from '../format.js';
import type { Output } from '../output.js';
import { failedWith, localTimeZone } from './shared.js';

/** The one session per user that `engram remember` writes to (by external id). */
export const REMEMBER_SESSION_EXTERNAL_ID = 'engram-cli-remember';
const EXTRACTION_WAIT_SECONDS = 60;

/** Finds or creates the caller's remember session. */
async function rememberSession(connection: Connection): Promise<string> {
  const { sessions } = await connection.ingestion.listSessions({
    externalId: REMEMBER_SESSION_EXTERNAL_ID,
    pageSize: 1,
  });
  const existing = sessions[0];
  if (existing !== undefined) return existing.name;
  const timeZone = localTimeZone();
  try {
    const { session } = await connection.ingestion.createSession({
      session: {
        displayName: 'engram remember',
        externalId: REMEMBER_SESSION_EXTERNAL_ID,
        ...(timeZone === undefined ? {} : { timeZone }),
      },
    });
    if (session === undefined) throw new Error('CreateSession answered without a session');
    return session.name;
  } catch (error) {
    // Created meanwhile by a concurrent `engram remember`: use that one.
    if (failedWith(error, Code.AlreadyExists)) {
      const again = await connection.ingestion.listSessions({
        externalId: REMEMBER_SESSION_EXTERNAL_ID,
        pageSize: 1,
      });
      if (again.sessions[0] !== undefined) return again.sessions[0].name;
    }
    throw error;
  }
}

/** One row per decision: outcome, rule, reason, content. */
export function decisionRows(job: ExtractionJob): string[][] {
  return job.decisions.map((decision: Decision) => {
    const candidate = job.candidates[decision.candidateIndex];
    const content =
      decision.memory !== undefined
        ? `${enumLabel(MemoryType, decision.memory.type)}: ${memoryContent(decision.memory)}`
        : candidate !== undefined
          ? `${enumLabel(MemoryType, candidate.type)}: ${memoryContent(candidate)}`
          : '-';
    return [
      enumLabel(DecisionOutcome, decision.outcome),
      decision.rule || '-',
      oneLine(decision.reason, 60) || '-',
      oneLine(content, 60),
      decision.memory === undefined || decision.memory.name === '' ? '-' : decision.memory.name,
    ];
  });
}

/** The rules that did something other than pass, for each decision (the interesting part of the trace). */
export function notableEvaluations(decision: Decision): string[] {
  return decision.evaluations
    .filter((e) => e.verdict !== RuleVerdict.PASSED && e.verdict !== RuleVerdict.NOT_EVALUATED)
    .map(
      (e) =>
        `${e.rule}: ${enumLabel(RuleVerdict, e.verdict)}${e.note === '' ? '' : ` (${oneLine(e.note, 80)})`}`,
    );
}

function printJob(out: Output, job: ExtractionJob): void {
  const { color } = out;
  const runs = job.extractorRuns
    .map(
      (r) =>
        `${enumLabel(Extractor, r.extractor).toLowerCase()} ${enumLabel(ExtractorRunState, r.state).toLowerCase()} (${r.candidateCount})`,
    )
    .join(', ');
  out.line(
    `extraction ${job.name}: ${enumLabel(ExtractionJobState, job.state)}${runs === '' ? '' : ` — ${runs}`}`,
  );
  if (job.error !== undefined && job.error.message !== '')
    out.line(color.red(`job error: ${job.error.message}`));
  if (job.state === ExtractionJobState.PENDING || job.state === ExtractionJobState.RUNNING) {
    out.line(
      `still ${enumLabel(ExtractionJobState, job.state)} after ${EXTRACTION_WAIT_SECONDS}s; look later with \`engram memories list\``,
    );
    return;
  }
  if (job.decisions.length === 0) {
    out.line('nothing to remember: the extractors proposed no candidate memory from this text');
    return;
  }
  out.line(renderTable(['outcome', 'rule', 'reason', 'content', 'memory'], decisionRows(job)));
  for (const decision of job.decisions) {
    for (const note of notableEvaluations(decision))
      out.line(color.dim(`  #${decision.candidateIndex} ${note}`));
  }
}

/**
 * `engram remember`: the text goes through the same path as a conversation — stored as a user
 * message (ingestion redacts secrets first), closed into a MemCell by a flush, extracted and
 * judged by governance's hard rules — and every decision is printed.
 */
export function registerRemember(program: Command, io: CliRuntime): void {
  program
    .command('remember')
    .description('remember a statement: extraction plus the hard rules, printing each decision')
    .argument('<text>', 'what to remember, e.g. "From now on please answer more concisely."')
    .action(
      action(io, async ({ out, connect, setExitCode }, _command, text) => {
        const connection = await connect();
        const session = await rememberSession(connection);
        const appended = await connection.ingestion.appendMessages({
          parent: session,
          messages: [{ role: MessageRole.USER, content: String(text) }],
        });
        const stored = appended.messages[0];
        const storedContent = stored?.content ?? '';
        const redacted = storedContent.includes('[redacted:');
        const flushed = await connection.ingestion.flushSession(
          {
            name: session,
            reason: 'engram remember',
            waitForExtraction: true,
            extractionWaitTimeout: { seconds: BigInt(EXTRACTION_WAIT_SECONDS) },
          },
          { timeoutMs: (EXTRACTION_WAIT_SECONDS + 15) * 1000 },
        );
        const cell = flushed.memCell;
        let job: ExtractionJob | undefined;
        if (cell !== undefined && cell.extractionJob !== '') {
          job = (await connection.governance.getExtractionJob({ name: cell.extractionJob })).extractionJob;
        }
        out.document({
          session,
          message: stored?.name ?? null,
          storedContent: stored?.content ?? null,
          redacted,
          memCell: cell?.name ?? null,
          memCellStatus: cell === undefined ? null : enumLabel(MemCellStatus, cell.status),
          extractionJob: job === undefined ? null : toJson(ExtractionJobSchema, job),
        });
        if (redacted) {
          out.line(
            out.color.yellow(
              `ingestion redacted a secret before storing the text: ${oneLine(storedContent, 200)}`,
            ),
          );
        }
        if (cell === undefined) {
          out.line('nothing to extract: the session had no open messages');
          return;
        }
        if (job === undefined) {
          out.line(
            `${cell.name} is ${enumLabel(MemCellStatus, cell.status)}; extraction has not started yet` +
              (cell.lastErrorMessage === '' ? '' : ` (last error: ${cell.lastErrorMessage})`),
          );
          if (cell.status === MemCellStatus.FAILED) setExitCode(1);
          return;
        }
        printJob(out, job);
        if (job.state === ExtractionJobState.FAILED) setExitCode(1);
      }),
    );
}
