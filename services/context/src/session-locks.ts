/**
 * Serializes the writes of one session's state within this process (compactions and client
 * updates): each runs after the previous one for the same key has settled. Across processes the
 * store's version check decides (the loser gets ETAG_MISMATCH and re-reads).
 */
export class SessionLocks {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `work` once every earlier `work` for `key` has settled; returns its result. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(work, work);
    const settled = current.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, settled);
    try {
      return await current;
    } finally {
      // The last one out removes the entry, so the map holds only sessions being written.
      if (this.tails.get(key) === settled) this.tails.delete(key);
    }
  }
}
