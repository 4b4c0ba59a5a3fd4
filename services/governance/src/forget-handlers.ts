import { GovernanceService } from '@engram/contracts/governance';
import { DEFAULT_PAGE_LIMITS, methodKey, pageSize, parseForgetReceiptName } from '@engram/resources';
import { errors, requirePrincipal, type Principal } from '@engram/runtime';
import {
  ExtractionJobRepository,
  ForgetReceiptRepository,
  MemoryRepository,
  ZERO_FORGET_COUNTS,
  addForgetCounts,
  forgetPayload,
  forgetReceiptName,
  idempotent,
  purgeRequestIds,
  requestKeyOf,
  type Executor,
  type ForgetCountsRecord,
  type ForgetReceiptRecord,
} from '@engram/store';
import { isAdmin, type GovernanceDeps, type GovernanceImpl } from './deps.js';
import { RECEIPT_STATE_NAMES, checkForgetUserRequest, receiptMessage } from './forget-api.js';
import { enumNames } from './memory-api.js';

const FORGET_USER = methodKey(GovernanceService.method.forgetUser);

/** Whether `principal` may see the receipt: its requester, its subject, or an administrator. */
function mayRead(principal: Principal, r: ForgetReceiptRecord): boolean {
  return isAdmin(principal) || r.subject === principal.subject || r.requestedBy === principal.subject;
}

/**
 * `ForgetUser`, `GetForgetReceipt` and `ListForgetReceipts`. ForgetUser erases governance's own
 * content and records the receipt in one transaction, then returns; the `ForgetWorker` carries out
 * the remaining steps (context, ingestion, the index) and completes the receipt.
 */
export class ForgetHandlers implements Pick<
  GovernanceImpl,
  'forgetUser' | 'getForgetReceipt' | 'listForgetReceipts'
> {
  readonly #deps: GovernanceDeps;
  readonly #receipts: ForgetReceiptRepository;
  readonly #memories: MemoryRepository;
  readonly #jobs: ExtractionJobRepository;

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
    this.#receipts = new ForgetReceiptRepository(deps.store);
    this.#memories = new MemoryRepository(deps.store);
    this.#jobs = new ExtractionJobRepository(deps.store);
  }

  /** ForgetUser: a subject's own request, or an administrator's for anyone. */
  readonly forgetUser: GovernanceImpl['forgetUser'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    checkForgetUserRequest(request);
    const { subject, reason, requestId } = request;
    if (subject !== principal.subject && !isAdmin(principal)) {
      throw errors.permissionDenied('ROLE_REQUIRED', 'forgetting another subject requires the "admin" role', {
        role: 'admin',
      });
    }
    const key = requestKeyOf(principal, FORGET_USER, requestId);
    const { result, replayed } = await idempotent(this.#deps.store, key, { subject, reason }, async (trx) => {
      const now = Date.now();
      const created = await this.#receipts.create(
        trx,
        { tenantId: principal.tenantId, subject, requestedBy: principal.subject, reason, requestId },
        ZERO_FORGET_COUNTS,
        now,
      );
      const counts = await this.#eraseGovernanceContent(trx, principal.tenantId, subject, created.id, now);
      await this.#receipts.update(created, { counts: addForgetCounts(created.counts, counts) }, now, trx);
      return { receiptId: created.id };
    });
    const receipt = await this.#receipts.get(principal.tenantId, result.receiptId);
    if (receipt === undefined) throw errors.notFound(forgetReceiptName(result.receiptId));
    if (!replayed) {
      this.#deps.logger.info(
        { forgetReceipt: forgetReceiptName(receipt.id), requestedBy: principal.subject, ...receipt.counts },
        'forget request accepted; governance content erased',
      );
      this.#deps.forgetWorker.wake();
    }
    return { forgetReceipt: receiptMessage(receipt) };
  };

  /** GetForgetReceipt: a receipt the caller may see. */
  readonly getForgetReceipt: GovernanceImpl['getForgetReceipt'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseForgetReceiptName(request.name);
    const receipt = await this.#receipts.get(principal.tenantId, id);
    // Invisible and absent look the same.
    if (receipt === undefined || !mayRead(principal, receipt)) throw errors.notFound(forgetReceiptName(id));
    return { forgetReceipt: receiptMessage(receipt) };
  };

  /** ListForgetReceipts: the receipts the caller may see (administrators: all of the tenant). */
  readonly listForgetReceipts: GovernanceImpl['listForgetReceipts'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const size = pageSize(request.pageSize, DEFAULT_PAGE_LIMITS);
    const states = enumNames(request.states, RECEIPT_STATE_NAMES, 'states');
    const page = await this.#receipts.list(
      principal.tenantId,
      {
        ...(request.subject !== '' ? { subject: request.subject } : {}),
        ...(states.length > 0 ? { states } : {}),
        ...(isAdmin(principal) ? {} : { involving: principal.subject }),
      },
      { pageSize: size, pageToken: request.pageToken },
    );
    return { forgetReceipts: page.items.map(receiptMessage), nextPageToken: page.nextPageToken };
  };

  /**
   * Erases governance's own content of `subject` created at or before `now`, for the receipt
   * `receiptId`, in the caller's transaction: the subject's memories (every status and scope) are
   * hard-deleted with MEMORY DELETE outbox rows tagged with the receipt, their revisions reduced to
   * content-free audit records; the subject's extraction jobs are deleted; the subject as the actor
   * of other owners' revisions is replaced by the receipt's name; the request ids the subject used
   * with governance are forgotten (except ForgetUser's: a retry must find its receipt).
   */
  async #eraseGovernanceContent(
    trx: Executor,
    tenantId: string,
    subject: string,
    receiptId: string,
    now: number,
  ): Promise<Partial<ForgetCountsRecord>> {
    const erasedBy = forgetReceiptName(receiptId);
    const purged = await this.#memories.purgeOwner(
      trx,
      tenantId,
      subject,
      { createdAtOrBefore: now, erasedBy, payload: forgetPayload(receiptId) },
      now,
    );
    // The jobs visible to this transaction were all created before `now`.
    const extractionJobs = await this.#jobs.purgeOwner(trx, tenantId, subject);
    const revisionActorsRedacted = await this.#memories.replaceRevisionActor(
      trx,
      tenantId,
      subject,
      erasedBy,
      now,
    );
    await purgeRequestIds(trx, {
      tenantId,
      subject,
      methodPrefix: `${GovernanceService.typeName}/`,
      createdAtOrBefore: now,
      keepMethods: [FORGET_USER],
    });
    return {
      memories: purged.memories,
      revisionsRedacted: purged.revisionsRedacted,
      revisionActorsRedacted,
      extractionJobs,
    };
  }
}
