import { Worker, isEngramError, type Logger } from '@engram/runtime';
import { MemoryRepository, inTransaction, type Store } from '@engram/store';

/**
 * Marks ACTIVE memories whose `expire_time` has passed EXPIRED, each with an EXPIRE revision
 * (actor SYSTEM) and an outbox row, through which the indexer removes the point. Reads already
 * treat such memories as expired (hydration drops them); the sweep makes it durable and visible.
 */
export class ExpirySweeper {
  /** The periodic sweep: at start, then every `everyMs` (60 s by default). */
  readonly worker: Worker;
  readonly #memories: MemoryRepository;

  constructor(
    private readonly deps: { readonly store: Store; readonly logger: Logger; readonly everyMs?: number },
  ) {
    this.#memories = new MemoryRepository(deps.store);
    const everyMs = deps.everyMs ?? 60_000;
    this.worker = new Worker({
      name: 'expiry',
      logger: deps.logger,
      pass: async (signal) => {
        await this.sweep(Date.now(), signal);
      },
      idleMs: everyMs,
      // A failed sweep is retried at the next period.
      backoff: { minMs: everyMs, maxMs: everyMs },
    });
  }

  /**
   * Expires everything due at `now`, in batches; returns how many memories it expired. Stops
   * between memories once `signal` aborts (each expiry is its own transaction).
   */
  async sweep(now = Date.now(), signal?: AbortSignal): Promise<number> {
    let expired = 0;
    for (;;) {
      const due = await this.#memories.findExpired(now, 200);
      if (due.length === 0) return expired;
      let progress = 0;
      for (const memory of due) {
        if (signal?.aborted === true) return expired;
        try {
          await inTransaction(this.deps.store, (trx) =>
            this.#memories.update(
              trx,
              memory.tenantId,
              memory.id,
              memory.version,
              { status: 'EXPIRED', statusReason: 'expire_time passed' },
              {
                action: 'EXPIRE',
                actorKind: 'SYSTEM',
                actorId: 'expiry-sweeper',
                reason: 'expire_time passed',
              },
              now,
            ),
          );
          expired += 1;
          progress += 1;
        } catch (error) {
          // Changed concurrently (updated, deleted): the next sweep sees its new state.
          if (!isEngramError(error)) throw error;
        }
      }
      if (progress === 0) return expired;
    }
  }
}
