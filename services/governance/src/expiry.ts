import { isEngramError, type Logger } from '@engram/runtime';
import { MemoryRepository, inTransaction, type Store } from '@engram/store';

/**
 * Marks ACTIVE memories whose `expire_time` has passed EXPIRED, each with an EXPIRE revision
 * (actor SYSTEM) and an outbox row, through which the indexer removes the point. Reads already
 * treat such memories as expired (hydration drops them); the sweep makes it durable and visible.
 */
export class ExpirySweeper {
  readonly #memories: MemoryRepository;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(
    private readonly deps: { readonly store: Store; readonly logger: Logger; readonly everyMs?: number },
  ) {
    this.#memories = new MemoryRepository(deps.store);
  }

  start(): void {
    this.#stopped = false;
    const tick = () => {
      this.#running = this.sweep().catch((error: unknown) => {
        this.deps.logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'expiry sweep failed; retrying later',
        );
      });
      void this.#running.finally(() => {
        if (this.#stopped) return;
        this.#timer = setTimeout(tick, this.deps.everyMs ?? 60_000);
        this.#timer.unref();
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#running;
  }

  /** Expires everything due at `now`, in batches; returns how many memories it expired. */
  async sweep(now = Date.now()): Promise<number> {
    let expired = 0;
    for (;;) {
      const due = await this.#memories.findExpired(now, 200);
      if (due.length === 0) return expired;
      let progress = 0;
      for (const memory of due) {
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
