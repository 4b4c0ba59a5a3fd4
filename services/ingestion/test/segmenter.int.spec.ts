import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '@engram/runtime';
import { SessionRepository, inTransaction, type Store } from '@engram/store';
import { dialects } from '../../../libs/store/test/harness.js';
import { DEFAULT_BOUNDARY_RULES } from '../src/domain/boundaries.js';
import { backoffMs, DEFAULT_HANDOFF_SETTINGS } from '../src/handoff.js';
import { Segmenter } from '../src/segmenter.js';

const MINUTE = 60_000;

describe.each(dialects)('the silence sweep on $name', (dialect) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let sessions: SessionRepository;
  let segmenter: Segmenter;

  beforeAll(async () => {
    ({ store, dispose } = await dialect.open());
    sessions = new SessionRepository(store);
    segmenter = new Segmenter({
      store,
      rules: DEFAULT_BOUNDARY_RULES,
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
  });
  afterAll(async () => {
    await segmenter.worker.stop();
    await dispose();
  });

  it('closes the open tail of a session silent for longer than the gap, once', async () => {
    const now = Date.UTC(2026, 10, 30, 12, 0);
    const silent = await inTransaction(store, (trx) =>
      sessions.createSession(trx, { tenantId: 's1', ownerId: 'alice' }, now - 3 * 60 * MINUTE),
    );
    const recent = await inTransaction(store, (trx) =>
      sessions.createSession(trx, { tenantId: 's1', ownerId: 'alice' }, now - 3 * 60 * MINUTE),
    );
    const say = (id: string, at: number) =>
      inTransaction(store, (trx) =>
        sessions.appendMessages(trx, 's1', id, [{ role: 'USER', content: 'hello', occurredAt: at }], {}, at),
      );
    await say(silent.id, now - 45 * MINUTE);
    await say(recent.id, now - 10 * MINUTE);

    expect(await segmenter.sweepSilence(now)).toBeGreaterThanOrEqual(1);
    const cells = await sessions.listMemCells('s1', silent.id, {}, { pageSize: 10 });
    expect(cells.items.map((c) => [c.firstSequence, c.lastSequence, c.reason])).toEqual([[1, 1, 'TIME_GAP']]);
    expect((await sessions.listMemCells('s1', recent.id, {}, { pageSize: 10 })).items).toEqual([]);
    // Nothing left to close: the tail is empty now.
    await segmenter.sweepSilence(now);
    expect((await sessions.listMemCells('s1', silent.id, {}, { pageSize: 10 })).items).toHaveLength(1);
  });
});

describe('the hand-off backoff', () => {
  it('doubles from the base up to the cap, with at most 20 % jitter', () => {
    const settings = DEFAULT_HANDOFF_SETTINGS;
    expect(backoffMs(1, settings, () => 0.5)).toBe(2_000);
    expect(backoffMs(2, settings, () => 0.5)).toBe(4_000);
    expect(backoffMs(4, settings, () => 0.5)).toBe(16_000);
    expect(backoffMs(30, settings, () => 0.5)).toBe(5 * MINUTE);
    expect(backoffMs(1, settings, () => 0)).toBe(1_600);
    expect(backoffMs(1, settings, () => 0.999_999)).toBeLessThanOrEqual(2_400);
  });
});
