import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { ErrorReason } from '@engram/contracts/common';
import {
  ExtractionJobState,
  type DecisionSchema,
  type ExtractionJobSchema,
  type ListExtractionJobsRequest,
} from '@engram/contracts/governance';
import { parseMemCellName, parseSessionName } from '@engram/resources';
import type {
  ExtractionJobFilter,
  ExtractionJobRecord,
  ExtractionJobState as StoredJobState,
  MemoryRecord,
} from '@engram/store';
import type { Judgement } from './domain/rules/types.js';
import { jobResult, type StoredDecision, type TokenUsage } from './extraction.js';
import {
  EXTRACTORS,
  JOB_STATES,
  OUTCOMES,
  RUN_STATES,
  VERDICTS,
  candidateMessage,
  enumNames,
  memoryMessage,
} from './memory-api.js';

const JOB_STATE_NAMES: Partial<Record<ExtractionJobState, StoredJobState>> = {
  [ExtractionJobState.PENDING]: 'PENDING',
  [ExtractionJobState.RUNNING]: 'RUNNING',
  [ExtractionJobState.SUCCEEDED]: 'SUCCEEDED',
  [ExtractionJobState.FAILED]: 'FAILED',
};

/** ListExtractionJobs' filters, checked, as the store's filter (the caller's ownership aside). */
export function extractionJobFilterOf(request: ListExtractionJobsRequest): ExtractionJobFilter {
  const memCellId =
    request.memCell === '' ? undefined : parseMemCellName(request.memCell, 'mem_cell').memCellId;
  const sessionId = request.session === '' ? undefined : parseSessionName(request.session, 'session');
  const states = enumNames(request.states, JOB_STATE_NAMES, 'states');
  return {
    ...(memCellId !== undefined ? { memCellId } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(states.length > 0 ? { states } : {}),
  };
}

/** The `ErrorReason` enum value of a reason name (unknown names: INTERNAL). */
export function errorReasonOf(name: string): ErrorReason {
  return (ErrorReason as unknown as Record<string, ErrorReason | undefined>)[name] ?? ErrorReason.INTERNAL;
}

function usageMessage(usage: TokenUsage | undefined) {
  return usage === undefined
    ? undefined
    : {
        promptTokens: BigInt(usage.promptTokens),
        completionTokens: BigInt(usage.completionTokens),
        calls: usage.calls,
        model: usage.model,
      };
}

/** A decision as the API's `Decision`, with its memory as it is now (when one was written). */
export function decisionMessage(
  d: StoredDecision | Judgement,
  memory: MemoryRecord | undefined,
): MessageInitShape<typeof DecisionSchema> {
  const stored = 'rule' in d;
  const superseded = stored ? d.supersededMemoryId : d.supersedesId;
  return {
    candidateIndex: d.candidateIndex,
    outcome: OUTCOMES[d.outcome],
    rule: stored ? d.rule : d.decidingRule,
    reason: d.reason,
    ...(memory !== undefined ? { memory: memoryMessage(memory) } : {}),
    supersededMemory: superseded === undefined ? '' : `memories/${superseded}`,
    evaluations: d.evaluations.map((e) => ({
      rule: e.rule,
      verdict: VERDICTS[e.verdict as keyof typeof VERDICTS],
      note: e.note ?? '',
      field: e.field ?? '',
    })),
  };
}

/**
 * A stored job as the API's `ExtractionJob`. `memories` resolves the ids of the decisions'
 * memories (re-read, so the job shows them as they are now; ids it lacks are shown without their
 * memory); `full` false leaves out candidates and decisions (the BASIC view); `candidates` false
 * leaves out the candidates only (the FULL view of a caller who does not own the job).
 */
export function jobMessage(
  job: ExtractionJobRecord,
  memories: ReadonlyMap<string, MemoryRecord>,
  full = true,
  candidates = full,
): MessageInitShape<typeof ExtractionJobSchema> {
  const meta = jobResult(job);
  const decisions = meta.decisions ?? [];
  const counts = { accepted: 0, superseded: 0, mergedDuplicate: 0, rejected: 0, quarantined: 0 };
  for (const d of decisions) {
    if (d.outcome === 'ACCEPTED') counts.accepted += 1;
    else if (d.outcome === 'SUPERSEDED') counts.superseded += 1;
    else if (d.outcome === 'MERGED_DUPLICATE') counts.mergedDuplicate += 1;
    else if (d.outcome === 'REJECTED') counts.rejected += 1;
    else counts.quarantined += 1;
  }
  const error = job.error as { reason?: string; message?: string } | undefined;
  const usage = job.usage as unknown as TokenUsage | Record<string, never>;
  return {
    name: `extractionJobs/${job.id}`,
    memCell: `sessions/${meta.sessionId}/memCells/${job.memCellId}`,
    owner: job.ownerId,
    requestedBy: meta.requestedBy,
    requestId: job.requestId,
    extractors: job.extractors.map((e) => EXTRACTORS[e]),
    dryRun: meta.dryRun,
    reextract: meta.reextract,
    state: JOB_STATES[job.state],
    attemptCount: job.attempts,
    extractorRuns: (meta.runs ?? []).map((r) => ({
      extractor: EXTRACTORS[r.extractor],
      state: RUN_STATES[r.state],
      candidateCount: r.candidateCount,
      ...(r.usage !== undefined ? { tokenUsage: usageMessage(r.usage) } : {}),
      ...(r.error !== undefined
        ? { error: { reason: errorReasonOf(r.error.reason), message: r.error.message } }
        : {}),
    })),
    languageCode: job.languageCode,
    ...(full
      ? {
          candidates: candidates
            ? (meta.candidates ?? []).map((c) => candidateMessage(c, meta.sessionId))
            : [],
          decisions: decisions.map((d) =>
            decisionMessage(d, d.memoryId === undefined ? undefined : memories.get(d.memoryId)),
          ),
        }
      : {}),
    decisionCounts: counts,
    ...('promptTokens' in usage ? { tokenUsage: usageMessage(usage as TokenUsage) } : {}),
    ...(error?.reason !== undefined
      ? { error: { reason: errorReasonOf(error.reason), message: error.message ?? '' } }
      : {}),
    createTime: timestampFromMs(job.createdAt),
    ...(meta.startedAt !== undefined ? { startTime: timestampFromMs(meta.startedAt) } : {}),
    updateTime: timestampFromMs(job.updatedAt),
    ...(job.completedAt !== undefined ? { endTime: timestampFromMs(job.completedAt) } : {}),
  };
}
