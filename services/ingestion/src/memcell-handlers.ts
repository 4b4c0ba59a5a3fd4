import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { IngestionService, MemCellStatus } from '@engram/contracts/ingestion';
import {
  DEFAULT_PAGE_LIMITS,
  methodKey,
  pageSize,
  parseMemCellName,
  parseSessionName,
} from '@engram/resources';
import { errors, requirePrincipal } from '@engram/runtime';
import { checkRequestId, idempotent, requestKeyOf, type MemCellRecord } from '@engram/store';
import type { IngestionDeps } from './deps.js';
import { SessionAccess } from './session-access.js';
import { memCellMessage, storedMemCellStatuses } from './sessions-api.js';
import { waitDeadline, waitMsOf } from './time.js';

type Impl = ServiceImpl<typeof IngestionService>;

/** How long FlushSession waits for the extraction by default and at most, ms. */
const FLUSH_WAIT_DEFAULT_MS = 30_000;
const FLUSH_WAIT_MAX_MS = 300_000;

/** MemCells: FlushSession, GetMemCell, ListMemCells. */
export class MemCellHandlers implements Pick<Impl, 'flushSession' | 'getMemCell' | 'listMemCells'> {
  readonly #deps: IngestionDeps;
  readonly #sessions: SessionAccess;

  constructor(deps: IngestionDeps) {
    this.#deps = deps;
    this.#sessions = new SessionAccess(deps);
  }

  /** FlushSession: closes the open tail into a MemCell (FLUSH), optionally waiting for its extraction. */
  readonly flushSession: Impl['flushSession'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseSessionName(request.name);
    checkRequestId(request.requestId);
    if (Array.from(request.reason).length > 256)
      throw errors.fieldInvalid('reason', 'at most 256 characters');
    let waitMs = FLUSH_WAIT_DEFAULT_MS;
    if (request.extractionWaitTimeout !== undefined) {
      waitMs = waitMsOf(request.extractionWaitTimeout);
      if (waitMs < 0 || waitMs > FLUSH_WAIT_MAX_MS) {
        throw errors.fieldInvalid('extraction_wait_timeout', 'range 0–300 seconds');
      }
    }
    const sessions = this.#sessions;
    const { result, replayed } = await idempotent(
      this.#deps.store,
      requestKeyOf(principal, methodKey(IngestionService.method.flushSession), request.requestId),
      { name: request.name, reason: request.reason },
      async (trx) => {
        const session = await sessions.owned(principal, id, trx);
        if (session.status === 'CLOSED') return { cellId: null };
        const cell = await sessions.closeTail(trx, session, 'FLUSH', request.reason);
        return { cellId: cell?.id ?? null };
      },
    );
    if (result.cellId === null) return {};
    if (!replayed) sessions.cellsClosed(1);
    let cell = await sessions.repository.getMemCell(principal.tenantId, id, result.cellId);
    if (cell === undefined) return {};
    if (request.waitForExtraction) cell = await this.#waitForExtraction(cell, waitMs, ctx);
    return { memCell: memCellMessage(cell) };
  };

  /** Waits until the cell is EXTRACTED or FAILED, or the time is up; returns its latest state. */
  async #waitForExtraction(cell: MemCellRecord, ms: number, ctx: HandlerContext): Promise<MemCellRecord> {
    const deadline = waitDeadline(ms, ctx);
    let current = cell;
    for (;;) {
      const latest = await this.#sessions.repository.getMemCell(cell.tenantId, cell.sessionId, cell.id);
      if (latest === undefined) return current;
      current = latest;
      if (current.status === 'EXTRACTED' || current.status === 'FAILED') return current;
      const left = deadline - Date.now();
      if (left <= 0 || ctx.signal.aborted) return current;
      await Promise.race([
        this.#deps.handOff.settled(),
        new Promise((resolve) => setTimeout(resolve, Math.min(left, 250))),
      ]);
    }
  }

  readonly getMemCell: Impl['getMemCell'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const { sessionId, memCellId } = parseMemCellName(request.name);
    await this.#sessions.checkReadableParent(principal, sessionId, request.name);
    const cell = await this.#sessions.repository.getMemCell(principal.tenantId, sessionId, memCellId);
    if (cell === undefined) throw errors.notFound(request.name);
    return { memCell: memCellMessage(cell) };
  };

  readonly listMemCells: Impl['listMemCells'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseSessionName(request.parent, 'parent');
    const statuses = storedMemCellStatuses(request.statuses.filter((s) => s !== MemCellStatus.UNSPECIFIED));
    const size = pageSize(request.pageSize, DEFAULT_PAGE_LIMITS);
    await this.#sessions.readable(principal, id);
    const page = await this.#sessions.repository.listMemCells(
      principal.tenantId,
      id,
      statuses.length > 0 ? { statuses } : {},
      { pageSize: size, pageToken: request.pageToken },
    );
    return { memCells: page.items.map(memCellMessage), nextPageToken: page.nextPageToken };
  };
}
