import { loggableError, type Logger } from '@engram/runtime';
import type { ReindexJobRecord, ReindexJobRepository, Store } from '@engram/store';
import type { VectorIndex } from '@engram/vector-index';
import type { Indexer } from './indexer.js';
import { runReindexJob } from './tenant-reindex.js';

/**
 * Runs accepted reindex jobs in the background of the process that accepted them. On shutdown
 * the running jobs are stopped at their next batch and marked FAILED (`SHUTTING_DOWN`): points
 * already written stay correct, and a new job finishes the work.
 */
export class ReindexWorker {
  readonly #running = new Set<Promise<unknown>>();
  readonly #stop = new AbortController();

  constructor(
    private readonly deps: {
      store: Store;
      index: VectorIndex;
      writer: Indexer;
      jobs: ReindexJobRepository;
      logger: Logger;
    },
  ) {}

  /** Starts `job` in the background. */
  start(job: ReindexJobRecord): void {
    const run = runReindexJob(job, { ...this.deps, signal: this.#stop.signal })
      .catch((error: unknown) => {
        this.deps.logger.error({ job: job.id, err: loggableError(error) }, 'reindex job crashed');
      })
      .finally(() => this.#running.delete(run));
    this.#running.add(run);
  }

  /** Jobs currently running in this process. */
  get active(): number {
    return this.#running.size;
  }

  /** Stops running jobs at their next batch and waits for them. */
  async close(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled([...this.#running]);
  }
}
