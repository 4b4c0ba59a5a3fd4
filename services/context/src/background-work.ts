/**
 * Work a call leaves running after it has answered (the re-sent compaction mark, Chat's automatic
 * compaction), tracked so that the module's `stop` waits for it before the process closes the
 * database and the models it uses.
 */
export class BackgroundWork {
  readonly #inFlight = new Set<Promise<void>>();

  /** Starts `work` without waiting for it; a failure goes to `onFailure`, never to the caller. */
  start(work: () => Promise<unknown>, onFailure: (error: unknown) => void): void {
    const running = (async () => {
      try {
        await work();
      } catch (error) {
        onFailure(error);
      }
    })();
    this.#inFlight.add(running);
    void running.finally(() => this.#inFlight.delete(running));
  }

  /** Resolves once everything started so far, and anything that work started meanwhile, has settled. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }
}
