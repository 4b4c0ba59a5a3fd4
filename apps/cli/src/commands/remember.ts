import { toJson } from '@bufbuild/protobuf';
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
import { MemCellStatus } from '@engram/contracts/ingestion';
import { rememberStatement } from '@engram/gateway';
import { action } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { enumLabel, memoryContent, oneLine, renderTable } from '../format.js';
import type { Output } from '../output.js';
import { localTimeZone } from './shared.js';

/** The one session per user that `engram remember` writes to (by external id): the gateway's. */
export { REMEMBER_SESSION_EXTERNAL_ID } from '@engram/gateway';

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

function printJob(out: Output, job: ExtractionJob, waitSeconds: number): void {
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
      `still ${enumLabel(ExtractionJobState, job.state)} after ${waitSeconds}s; look later with \`engram memories list\``,
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
        // The RPC flow (session, append, flush, extraction) is the gateway's, shared with MCP's remember.
        const outcome = await rememberStatement(connection, String(text), {
          timeZone: localTimeZone(),
          reason: 'engram remember',
        });
        const { session, memCell: cell, job } = outcome;
        const stored = outcome.message;
        const storedContent = stored?.content ?? '';
        const redacted = outcome.redacted;
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
        printJob(out, job, outcome.waitSeconds);
        if (job.state === ExtractionJobState.FAILED) setExitCode(1);
      }),
    );
}
