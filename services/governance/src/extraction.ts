import { setMaxListeners } from 'node:events';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { MessageRole, type IngestionService } from '@engram/contracts/ingestion';
import type { Logger } from '@engram/runtime';
import { dependencyFailure, describeError, errors, isEngramError } from '@engram/runtime';
import {
  ExtractionJobRepository,
  MemoryRepository,
  inTransaction,
  type Executor,
  type ExtractionJobRecord,
  type JsonValue,
  type MemoryRecord,
  type RevisionInput,
  type Store,
} from '@engram/store';
import type { Candidate, ExtractionInput, ExtractorName, SourceMessage } from './domain/candidate.js';
import { withDefaultEvergreen } from './domain/evergreen.js';
import { judge } from './domain/rules/engine.js';
import type { GovernancePolicy } from './domain/rules/policy.js';
import { redactCandidateForRecord } from './domain/rules/record.js';
import type { Judgement, MemoryPlace, RuleLookups, RulePrincipal } from './domain/rules/types.js';

/** What one extractor run produced. */
export interface ExtractorOutput {
  readonly candidates: readonly Candidate[];
  /** Model usage of the run (absent for the offline extractors). */
  readonly usage?: TokenUsage;
}

export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly calls: number;
  readonly model: string;
}

/** Runs one extractor over a MemCell: the model's prompt, or the offline rules. */
export type RunExtractor = (
  extractor: ExtractorName,
  input: ExtractionInput,
  signal: AbortSignal,
) => Promise<ExtractorOutput>;

/** How an extractor run ended, as kept in the job (proto `ExtractorRun`). */
export interface StoredRun {
  readonly extractor: ExtractorName;
  readonly state: 'SUCCEEDED' | 'FAILED' | 'SKIPPED';
  readonly candidateCount: number;
  readonly usage?: TokenUsage;
  readonly error?: { readonly reason: string; readonly message: string };
}

/** An extractor's run and what it produced. */
type RunOutcome = { readonly run: StoredRun; readonly candidates: readonly Candidate[] };

/** A decision as kept in the job; the memory is re-read when the job is shown. */
export interface StoredDecision {
  readonly candidateIndex: number;
  readonly outcome: Judgement['outcome'];
  readonly rule: string;
  readonly reason: string;
  readonly memoryId?: string;
  readonly supersededMemoryId?: string;
  readonly evaluations: readonly { rule: string; verdict: string; note?: string; field?: string }[];
}

/** Everything a job records beyond the table's columns (`extraction_jobs.result_json`). */
export interface JobResult {
  readonly sessionId: string;
  readonly requestedBy: string;
  readonly dryRun: boolean;
  readonly reextract: boolean;
  readonly runs?: readonly StoredRun[];
  readonly candidates?: readonly Candidate[];
  readonly decisions?: readonly StoredDecision[];
  readonly startedAt?: number;
}

export function jobResult(job: ExtractionJobRecord): JobResult {
  return job.result as unknown as JobResult;
}

/** The verified caller's credential, replayed on calls to ingestion while the job runs. */
export interface JobCaller {
  readonly principal: RulePrincipal;
  readonly headers: Headers;
}

export interface ExtractionDeps {
  readonly store: Store;
  readonly logger: Logger;
  readonly ingestion: Client<typeof IngestionService>;
  readonly policies: (tenantId: string) => GovernancePolicy;
  readonly runExtractor: RunExtractor;
  /** Whether extractors call a model (recorded per job; `''` for the offline extractors). */
  readonly model: string;
  /** How long a RUNNING job's attempt holds it without renewing (default {@link EXTRACTION_LEASE_MS}). */
  readonly leaseMs?: number;
}

/**
 * How long the attempt that runs a job holds it without renewing its lease (`updated_at`, renewed
 * every third of it while the job runs): a RUNNING job is taken over by another process only
 * once its lease has lapsed, i.e. its runner stopped (decision 0027). Safety does not depend on
 * it: every transition is a compare-and-set on the attempt, so a lapsed but live attempt loses.
 */
export const EXTRACTION_LEASE_MS = 10_000;

/** Most messages read from one MemCell (the message cap of a MemCell is far lower by default). */
const MAX_CELL_MESSAGES = 2_000;

/** Maps a failed call to ingestion onto the error ExtractMemories answers with. */
export function ingestionFailure(error: unknown, name: string): Error {
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.NotFound || connectError.code === Code.PermissionDenied) {
    return errors.notFound(name);
  }
  if (connectError.code === Code.DeadlineExceeded) {
    return errors.unavailable('ingestion', `ingestion could not be reached: ${connectError.rawMessage}`, {
      cause: error,
    });
  }
  return dependencyFailure('ingestion', error);
}

/**
 * Reads a MemCell and its messages from ingestion with the caller's credential (the owner, or
 * the `service` principal of the hand-off: ingestion lets it read every session of the tenant).
 */
export async function readMemCell(
  ingestion: Client<typeof IngestionService>,
  memCellName: string,
  headers: Headers,
  signal?: AbortSignal,
): Promise<{ input: ExtractionInput; ownerId: string; languageCode: string }> {
  const options = { headers, ...(signal !== undefined ? { signal } : {}) };
  try {
    const { memCell } = await ingestion.getMemCell({ name: memCellName }, options);
    if (memCell === undefined) throw errors.notFound(memCellName);
    const sessionName = memCellName.replace(/\/memCells\/.*$/, '');
    const { session } = await ingestion.getSession({ name: sessionName }, options);
    if (session === undefined) throw errors.notFound(memCellName);
    const messages: SourceMessage[] = [];
    let pageToken = '';
    do {
      const page = await ingestion.listMessages(
        {
          parent: sessionName,
          fromSequence: memCell.firstSequence,
          toSequence: memCell.lastSequence,
          pageSize: 1000,
          pageToken,
        },
        options,
      );
      for (const m of page.messages) {
        const role = MessageRole[m.role] as SourceMessage['role'];
        messages.push({
          id: m.name.replace(/^.*\/messages\//, ''),
          sequence: Number(m.sequence),
          role,
          content: m.content,
          occurredAt: m.occurTime === undefined ? 0 : timestampMs(m.occurTime),
          ...(m.participantName !== '' ? { participantName: m.participantName } : {}),
        });
      }
      pageToken = page.nextPageToken;
    } while (pageToken !== '' && messages.length < MAX_CELL_MESSAGES);
    return {
      input: {
        memCellId: memCellName.replace(/^.*\/memCells\//, ''),
        sessionId: sessionName.replace(/^sessions\//, ''),
        languageCode: session.languageCode,
        timeZone: session.timeZone === '' ? 'UTC' : session.timeZone,
        messages,
      },
      ownerId: session.owner,
      languageCode: session.languageCode,
    };
  } catch (error) {
    if (isEngramError(error)) throw error;
    throw ingestionFailure(error, memCellName);
  }
}

/** The store as the hard rules read it, inside the write transaction, for one tenant. */
export function storeLookups(memories: MemoryRepository, trx: Executor, tenantId: string): RuleLookups {
  const inPlace = (m: MemoryRecord, place: MemoryPlace) => m.scope === place.scope && m.orgId === place.orgId;
  return {
    async findByContentHash(hash, place) {
      const found = await memories.findByContentHash(trx, tenantId, place.ownerId, hash);
      return found.find((m) => inPlace(m, place))?.id;
    },
    async findActiveFact(namespace, key, place) {
      const found = await memories.findActiveByKey(trx, {
        tenantId,
        ownerId: place.ownerId,
        scope: place.scope,
        orgId: place.orgId,
        namespace,
        key,
      });
      return found === undefined
        ? undefined
        : {
            id: found.id,
            sourceKind: found.sourceKind,
            confidence: found.confidence,
            ...(found.value !== undefined ? { value: found.value } : {}),
            text: found.text,
            evergreen: found.evergreen,
          };
    },
    countActive: (ownerId, type) =>
      memories.countActive(tenantId, ownerId, type === undefined ? {} : { type }, trx),
    countActiveEvergreen: (ownerId) => memories.countActive(tenantId, ownerId, { evergreenOnly: true }, trx),
  };
}

/**
 * Commits the decisions of a judgement: ACCEPTED and QUARANTINED plans are created (with their
 * revision and outbox row), SUPERSEDED ones are created and the FACT they replace is marked
 * SUPERSEDED and linked; duplicates and rejections write nothing. Returns the stored decisions.
 */
export async function commitJudgements(
  trx: Executor,
  memories: MemoryRepository,
  judgements: readonly Judgement[],
  actor: {
    kind: 'EXTRACTOR' | 'USER' | 'SERVICE' | 'ADMIN';
    id: string;
    extractionJobId?: string;
    requestId?: string;
  },
  now: number,
): Promise<StoredDecision[]> {
  const created = new Map<number, MemoryRecord>();
  const decisions: StoredDecision[] = [];
  for (const j of judgements) {
    let memoryId: string | undefined;
    let supersededId: string | undefined;
    if (j.memory !== undefined && j.outcome !== 'MERGED_DUPLICATE' && j.outcome !== 'REJECTED') {
      const replaced =
        j.supersedes === undefined
          ? undefined
          : j.supersedes.kind === 'stored'
            ? j.supersedes.id
            : created.get(j.supersedes.candidateIndex)?.id;
      const record = await memories.create(
        trx,
        { ...j.memory, ...(replaced !== undefined ? { supersedesId: replaced } : {}) },
        {
          action: j.outcome === 'QUARANTINED' ? 'QUARANTINE' : 'CREATE',
          actorKind: actor.kind,
          actorId: actor.id,
          reason: j.reason,
          rule: j.decidingRule,
          ...(actor.requestId !== undefined ? { requestId: actor.requestId } : {}),
          ...(actor.extractionJobId !== undefined ? { extractionJobId: actor.extractionJobId } : {}),
        },
        now,
      );
      created.set(j.candidateIndex, record);
      memoryId = record.id;
      if (replaced !== undefined && j.outcome === 'SUPERSEDED') {
        await markSuperseded(
          trx,
          memories,
          { tenantId: record.tenantId, id: replaced },
          record.id,
          {
            action: 'SUPERSEDE',
            actorKind: actor.kind,
            actorId: actor.id,
            reason: j.reason,
            rule: j.decidingRule,
            ...(actor.extractionJobId !== undefined ? { extractionJobId: actor.extractionJobId } : {}),
          },
          now,
        );
        supersededId = replaced;
      }
    } else if (j.outcome === 'MERGED_DUPLICATE') {
      memoryId =
        j.duplicateOf?.kind === 'stored'
          ? j.duplicateOf.id
          : created.get(j.duplicateOf?.candidateIndex ?? -1)?.id;
    }
    decisions.push(storedDecision(j, memoryId, supersededId));
  }
  return decisions;
}

/** A judgement as its job keeps the decision (with the memory it wrote or merged into). */
function storedDecision(j: Judgement, memoryId?: string, supersededMemoryId?: string): StoredDecision {
  return {
    candidateIndex: j.candidateIndex,
    outcome: j.outcome,
    rule: j.decidingRule,
    reason: j.reason,
    ...(memoryId !== undefined ? { memoryId } : {}),
    ...(supersededMemoryId !== undefined ? { supersededMemoryId } : {}),
    evaluations: j.evaluations.map((e) => ({
      rule: e.rule,
      verdict: e.verdict,
      ...(e.note !== undefined ? { note: e.note } : {}),
      ...(e.field !== undefined ? { field: e.field } : {}),
    })),
  };
}

/**
 * Marks the memory `replaced` SUPERSEDED by memory `byId`, with `revision`, if it is still ACTIVE
 * (one that changed meanwhile is left as it is).
 */
export async function markSuperseded(
  trx: Executor,
  memories: MemoryRepository,
  replaced: { readonly tenantId: string; readonly id: string },
  byId: string,
  revision: RevisionInput,
  now: number,
): Promise<void> {
  const old = await memories.get(replaced.tenantId, replaced.id, trx);
  if (old?.status !== 'ACTIVE') return;
  await memories.update(
    trx,
    old.tenantId,
    old.id,
    old.version,
    { status: 'SUPERSEDED', statusReason: `superseded by memories/${byId}`, supersededById: byId },
    revision,
    now,
  );
}

/**
 * Runs extraction jobs (blueprint §3 flow 1): reads the MemCell from ingestion, runs the requested
 * extractors concurrently, judges every candidate with the hard rules and commits the memories,
 * their revisions and outbox rows together with the finished job, in one transaction. A job that
 * fails records why and writes no memory. One run per job at a time in this process; a job left
 * RUNNING by a stopped process is run again when its request is retried.
 */
export class ExtractionRunner {
  readonly #jobs: ExtractionJobRepository;
  readonly #memories: MemoryRepository;
  readonly #running = new Map<string, Promise<ExtractionJobRecord>>();
  readonly #abort = new AbortController();

  constructor(private readonly deps: ExtractionDeps) {
    // Every running job's calls listen to this one signal.
    setMaxListeners(0, this.#abort.signal);
    this.#jobs = new ExtractionJobRepository(deps.store);
    this.#memories = new MemoryRepository(deps.store);
  }

  /**
   * Runs the job unless it has ended, is already running here, or is RUNNING elsewhere under a
   * live lease (then it resolves with the job as read); resolves with it when it ends.
   */
  run(job: ExtractionJobRecord, caller: JobCaller): Promise<ExtractionJobRecord> {
    if (job.state === 'SUCCEEDED' || job.state === 'FAILED') return Promise.resolve(job);
    let running = this.#running.get(job.id);
    if (running === undefined) {
      if (!this.mayTakeOver(job)) return Promise.resolve(job);
      running = this.#execute(job, caller).finally(() => this.#running.delete(job.id));
      this.#running.set(job.id, running);
    }
    return running;
  }

  /**
   * Whether this process may start the unfinished job: it does not run it already, and the job is
   * PENDING or RUNNING under a lapsed lease (its runner stopped).
   */
  mayTakeOver(job: ExtractionJobRecord, now = Date.now()): boolean {
    if (this.#running.has(job.id)) return false;
    return job.state === 'PENDING' || job.updatedAt <= now - this.#leaseMs;
  }

  get #leaseMs(): number {
    return this.deps.leaseMs ?? EXTRACTION_LEASE_MS;
  }

  async stop(): Promise<void> {
    this.#abort.abort(new Error('shutting down'));
    await Promise.allSettled([...this.#running.values()]);
  }

  async #execute(job: ExtractionJobRecord, caller: JobCaller): Promise<ExtractionJobRecord> {
    const { tenantId } = job;
    const meta = jobResult(job);
    const startedAt = Date.now();
    // Compare-and-set on what was read: of two replicas starting (or taking over) the job, one
    // attempt wins; the other answers with the job as it is (decision 0027).
    let started: ExtractionJobRecord;
    try {
      started = await inTransaction(this.deps.store, (trx) =>
        this.#jobs.update(trx, tenantId, job.id, {
          state: 'RUNNING',
          attempts: job.attempts + 1,
          result: { ...meta, startedAt } as unknown as JsonValue,
          expectedState: job.state,
          expectedAttempts: job.attempts,
        }),
      );
    } catch (error) {
      if (!lostRace(error)) throw error;
      return this.#current(job, 'extraction job started or ended by another attempt');
    }
    const log = this.deps.logger.child({
      extractionJob: `extractionJobs/${job.id}`,
      attempt: started.attempts,
    });
    const lease = this.#renewLease(started, log);
    try {
      const memCellName = `sessions/${meta.sessionId}/memCells/${job.memCellId}`;
      const { input, languageCode } = await readMemCell(
        this.deps.ingestion,
        memCellName,
        caller.headers,
        this.#abort.signal,
      );
      const skip = meta.reextract ? new Set<ExtractorName>() : await this.#alreadyExtracted(job);
      const runs = await Promise.all(
        job.extractors.map((extractor) =>
          skip.has(extractor)
            ? Promise.resolve<RunOutcome>({
                run: { extractor, state: 'SKIPPED', candidateCount: 0 },
                candidates: [],
              })
            : this.#runExtractor(extractor, input, log),
        ),
      );
      // Profile facts the user stated are evergreen by default (domain/evergreen.ts).
      const candidates = runs
        .flatMap((r) => r.candidates)
        .map(withDefaultEvergreen)
        // Their message and MemCell ids are of this MemCell's session.
        .map((c) =>
          c.evidence.sessionId === undefined
            ? { ...c, evidence: { ...c.evidence, sessionId: meta.sessionId } }
            : c,
        );
      const failed = runs.filter((r) => r.run.state === 'FAILED');
      const storedRuns = runs.map((r) => r.run);
      if (failed.length > 0 && failed.length === runs.filter((r) => r.run.state !== 'SKIPPED').length) {
        const first = failed[0]?.run.error;
        return await this.#fail(
          started,
          { ...meta, startedAt, runs: storedRuns },
          first?.reason ?? 'INTERNAL',
          first?.message ?? 'every extractor failed',
        );
      }
      const finished = await this.#succeed(started, caller, {
        result: { ...meta, startedAt, runs: storedRuns },
        candidates,
        languageCode,
      });
      log.info(
        { candidates: candidates.length, extractors: storedRuns.map((r) => `${r.extractor}:${r.state}`) },
        'extraction job succeeded',
      );
      return finished;
    } catch (error) {
      const reason = isEngramError(error) ? error.reason : 'INTERNAL';
      const message = error instanceof Error ? error.message : String(error);
      log.warn({ reason }, 'extraction job failed');
      return await this.#fail(started, { ...meta, startedAt }, reason, message);
    } finally {
      clearInterval(lease);
    }
  }

  /** Renews the attempt's lease every third of it while it runs (a lost renewal is only logged). */
  #renewLease(started: ExtractionJobRecord, log: Logger): NodeJS.Timeout {
    const timer = setInterval(
      () => {
        this.#jobs.touch(started.tenantId, started.id, started.attempts).then(
          (held) => {
            if (!held) clearInterval(timer);
          },
          (error: unknown) => {
            log.warn({ err: describeError(error) }, 'extraction lease not renewed');
          },
        );
      },
      Math.max(100, Math.floor(this.#leaseMs / 3)),
    );
    // A lease timer never holds the process open.
    timer.unref();
    return timer;
  }

  /** Runs one extractor; a failure is the run's (FAILED, with its reason), not the job's. */
  async #runExtractor(extractor: ExtractorName, input: ExtractionInput, log: Logger): Promise<RunOutcome> {
    try {
      const out = await this.deps.runExtractor(extractor, input, this.#abort.signal);
      return {
        run: {
          extractor,
          state: 'SUCCEEDED',
          candidateCount: out.candidates.length,
          ...(out.usage !== undefined ? { usage: out.usage } : {}),
        },
        candidates: out.candidates,
      };
    } catch (error) {
      const connectError = ConnectError.from(error);
      const reason = isEngramError(error) ? error.reason : Code[connectError.code].toUpperCase();
      log.warn({ extractor, reason }, 'extractor failed');
      return {
        run: {
          extractor,
          state: 'FAILED',
          candidateCount: 0,
          error: { reason, message: connectError.rawMessage.slice(0, 1000) },
        },
        candidates: [],
      };
    }
  }

  /**
   * Judges the candidates and, in one transaction, commits their memories (unless a dry run) with
   * the job SUCCEEDED.
   */
  async #succeed(
    job: ExtractionJobRecord,
    caller: JobCaller,
    outcome: { result: JobResult; candidates: readonly Candidate[]; languageCode: string },
  ): Promise<ExtractionJobRecord> {
    const { tenantId } = job;
    const { result, candidates } = outcome;
    const now = Date.now();
    return inTransaction(this.deps.store, async (trx) => {
      const judgements = await judge(candidates, {
        principal: caller.principal,
        owner: job.ownerId,
        now,
        policy: this.deps.policies(tenantId),
        lookups: storeLookups(this.#memories, trx, tenantId),
        mode: 'extract',
      });
      const decisions = result.dryRun
        ? judgements.map((j) => storedDecision(j))
        : await commitJudgements(
            trx,
            this.#memories,
            judgements,
            { kind: 'EXTRACTOR', id: `extractor/${this.deps.model || 'offline'}`, extractionJobId: job.id },
            now,
          );
      const usage = sumUsage(result.runs ?? []);
      return this.#jobs.update(trx, tenantId, job.id, {
        state: 'SUCCEEDED',
        languageCode: outcome.languageCode,
        // What is recorded of a candidate never keeps a secret, even when the rules refused it.
        result: {
          ...result,
          candidates: candidates.map((c) => redactCandidateForRecord(c, this.deps.policies(tenantId))),
          decisions,
        } as unknown as JsonValue,
        usage: usage as unknown as JsonValue,
        // Only the attempt that holds the job ends it: a lost attempt's memories roll back.
        expectedState: 'RUNNING',
        expectedAttempts: job.attempts,
      });
    });
  }

  /**
   * Records the attempt `job` (as started) FAILED, if it still holds the job: an attempt taken
   * over by a later one, or a job another attempt ended, is left as it is.
   */
  async #fail(job: ExtractionJobRecord, result: JobResult, reason: string, message: string) {
    try {
      return await inTransaction(this.deps.store, (trx) =>
        this.#jobs.update(trx, job.tenantId, job.id, {
          state: 'FAILED',
          result: result as unknown as JsonValue,
          error: { reason, message: message.slice(0, 1000) },
          expectedState: 'RUNNING',
          expectedAttempts: job.attempts,
        }),
      );
    } catch (error) {
      if (!lostRace(error)) throw error;
      return this.#current(job, 'extraction attempt superseded; its outcome is not recorded');
    }
  }

  /** The job as it is now, when this attempt lost it to another (logged, nothing written). */
  async #current(job: ExtractionJobRecord, message: string): Promise<ExtractionJobRecord> {
    const now = await this.#jobs.get(job.tenantId, job.id);
    this.deps.logger.info(
      { extractionJob: `extractionJobs/${job.id}`, attempt: job.attempts, state: now?.state },
      message,
    );
    return now ?? job;
  }

  /** Extractors that already succeeded on the job's MemCell in an earlier non-dry-run job. */
  async #alreadyExtracted(job: ExtractionJobRecord): Promise<Set<ExtractorName>> {
    const earlier = await this.#jobs.listByMemCell(job.tenantId, job.memCellId, { pageSize: 500 });
    const done = new Set<ExtractorName>();
    for (const other of earlier.items) {
      if (other.id === job.id || other.state !== 'SUCCEEDED') continue;
      const result = jobResult(other);
      if (result.dryRun) continue;
      for (const run of result.runs ?? []) if (run.state === 'SUCCEEDED') done.add(run.extractor);
    }
    return done;
  }
}

/** The job's compare-and-set failed: another attempt holds or ended it. */
function lostRace(error: unknown): boolean {
  return isEngramError(error) && error.reason === 'ETAG_MISMATCH';
}

function sumUsage(runs: readonly StoredRun[]): TokenUsage | Record<string, never> {
  const used = runs.flatMap((r) => (r.usage === undefined ? [] : [r.usage]));
  if (used.length === 0) return {};
  return {
    promptTokens: used.reduce((n, u) => n + u.promptTokens, 0),
    completionTokens: used.reduce((n, u) => n + u.completionTokens, 0),
    calls: used.reduce((n, u) => n + u.calls, 0),
    model: used[0]?.model ?? '',
  };
}
