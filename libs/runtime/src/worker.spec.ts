import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { createLogger } from '@engram/telemetry';
import { Worker, type WorkerOptions } from './worker.js';

const logger = createLogger({ service: 'test', level: 'silent' });

/** Resolves when `condition` holds (polled), or rejects after `ms`. */
async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function worker(pass: WorkerOptions['pass'], idleMs = 60_000, extra = {}) {
  const registry = new Registry();
  return { w: new Worker({ name: 'test', logger, pass, idleMs, registry, ...extra }), registry };
}

describe('Worker', () => {
  it('runs a pass at start, another when woken, and none after stop', async () => {
    let passes = 0;
    const { w } = worker(async () => {
      passes += 1;
    });
    w.start();
    await until(() => passes === 1);
    w.wake();
    await until(() => passes === 2);
    await w.stop();
    w.wake();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(passes).toBe(2);
    expect(w.running).toBe(false);
  });

  it('never overlaps passes: a wake during a pass runs exactly one more after it', async () => {
    let active = 0;
    let maxActive = 0;
    let passes = 0;
    let release: () => void = () => undefined;
    const { w } = worker(async () => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      passes += 1;
      if (passes === 1) await new Promise<void>((resolve) => (release = resolve));
      active -= 1;
    });
    w.start();
    await until(() => passes === 1);
    w.wake();
    w.wake();
    w.wake();
    release();
    await until(() => passes === 2);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(passes).toBe(2);
    expect(maxActive).toBe(1);
    await w.stop();
  });

  it('runs again at once while a pass reports more work, then sweeps after idleMs', async () => {
    let passes = 0;
    const { w } = worker(async () => {
      passes += 1;
      return { more: passes < 3 };
    }, 40);
    w.start();
    await until(() => passes === 3);
    // The periodic sweep: nothing wakes it, yet it passes again after idleMs.
    await until(() => passes >= 4);
    await w.stop();
  });

  it('honours nextInMs below idleMs', async () => {
    const times: number[] = [];
    const { w } = worker(async () => {
      times.push(Date.now());
      return { nextInMs: 20 };
    });
    w.start();
    await until(() => times.length === 3);
    await w.stop();
  });

  it('backs off after a failure, logs it, and counts passes by outcome', async () => {
    let passes = 0;
    const { w, registry } = worker(
      async () => {
        passes += 1;
        if (passes <= 2) throw new Error('store unreachable');
        return undefined;
      },
      60_000,
      { backoff: { minMs: 10, maxMs: 20 } },
    );
    w.start();
    await until(() => passes === 3);
    await w.stop();
    const metric = await registry.getSingleMetric('engram_worker_passes_total')?.get();
    const count = (outcome: string) =>
      metric?.values.find((v) => v.labels['outcome'] === outcome && v.labels['worker'] === 'test')?.value;
    expect(count('failed')).toBe(2);
    expect(count('ok')).toBe(1);
  });

  it('aborts the signal on stop, waits for the pass in flight and for drain', async () => {
    const order: string[] = [];
    const { w } = worker(
      async (signal) => {
        order.push('pass');
        await new Promise<void>((resolve) => {
          signal.addEventListener(
            'abort',
            () => {
              resolve();
            },
            { once: true },
          );
        });
        order.push('pass ended');
      },
      60_000,
      {
        drain: async () => {
          order.push('drained');
        },
      },
    );
    w.start();
    await until(() => order.length === 1);
    await w.stop();
    expect(order).toEqual(['pass', 'pass ended', 'drained']);
    // A restart gets a fresh signal.
    w.start();
    expect(w.signal.aborted).toBe(false);
    await w.stop();
  });
});
