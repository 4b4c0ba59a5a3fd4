import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { RetryInfoSchema } from '@engram/contracts/grpc';
import { EngramError, errorInfoOf, toConnectError } from '@engram/errors';
import { admissionMetrics, metricsRegistry, scopedMetrics } from '@engram/telemetry';
import type { AdmissionTicket } from './admission.js';
import {
  ProcessAdmission,
  QUEUE_TIMEOUT_FACTOR,
  admitted,
  processAdmission,
  type AdmissionClock,
  type ProcessAdmissionLimits,
} from './process-admission.js';

/** A clock that moves only when the test says so; timers fire as it passes them. */
class FakeClock implements AdmissionClock {
  #now = 0;
  #timers: { at: number; run: () => void; cancelled: boolean }[] = [];

  now(): number {
    return this.#now;
  }

  schedule(ms: number, run: () => void): () => void {
    const timer = { at: this.#now + ms, run, cancelled: false };
    this.#timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  /** Live timers (not fired, not cancelled). */
  get pending(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  advance(ms: number): void {
    this.#now += ms;
    const due = this.#timers.filter((t) => !t.cancelled && t.at <= this.#now);
    this.#timers = this.#timers.filter((t) => !due.includes(t));
    for (const timer of due) timer.run();
  }
}

const METHOD = 'engram.retrieval.v1.RetrievalService/Search';

function gate(limits: Partial<ProcessAdmissionLimits> = {}) {
  const clock = new FakeClock();
  const admission = new ProcessAdmission(
    { maxConcurrent: 1, maxQueue: 2, maxQueueWaitMs: 100, ...limits },
    { method: METHOD, clock },
  );
  return { clock, admission };
}

/** Settles pending promise callbacks. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The state of a promise after pending callbacks ran. */
async function state<T>(promise: Promise<T>): Promise<'pending' | 'resolved' | 'rejected'> {
  let result: 'pending' | 'resolved' | 'rejected' = 'pending';
  promise.then(
    () => (result = 'resolved'),
    () => (result = 'rejected'),
  );
  await flush();
  return result;
}

async function refusal(promise: Promise<unknown>): Promise<EngramError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof EngramError) return error;
    throw error;
  }
  throw new Error('expected the call to be refused');
}

describe('ProcessAdmission', () => {
  it('admits up to the limit at once, queues the next and refuses beyond the queue', async () => {
    const { admission } = gate({ maxConcurrent: 2, maxQueue: 1 });
    await admission.admit();
    await admission.admit();
    const third = admission.admit();
    expect(await state(third)).toBe('pending');
    expect(admission.queued).toBe(1);
    const refused = await refusal(admission.admit());
    expect(refused.code).toBe(Code.ResourceExhausted);
    expect(refused.reason).toBe('OVERLOADED');
    expect(refused.metadata).toMatchObject({
      method: METHOD,
      limit: 'queue_full',
      max_concurrent: 2,
      max_queue: 1,
    });
    expect(refused.retryDelayMs).toBeGreaterThan(0);
    // The refusal took no queue slot.
    expect(admission.queued).toBe(1);
    expect(admission.inFlight).toBe(2);
  });

  it('hands a released slot to the oldest waiter, before any newcomer', async () => {
    const { admission } = gate({ maxConcurrent: 1, maxQueue: 3 });
    const first = await admission.admit();
    const order: string[] = [];
    const a = admission.admit().then((t) => (order.push('a'), t));
    const b = admission.admit().then((t) => (order.push('b'), t));
    first.release();
    // A newcomer arriving now finds the queue non-empty and waits behind b.
    const c = admission.admit().then((t) => (order.push('c'), t));
    (await a).release();
    (await b).release();
    (await c).release();
    expect(order).toEqual(['a', 'b', 'c']);
    expect(admission.inFlight).toBe(0);
    expect(admission.queued).toBe(0);
  });

  it('releases a slot exactly once, however often release is called', async () => {
    const { admission } = gate({ maxConcurrent: 2, maxQueue: 0 });
    const one = await admission.admit();
    await admission.admit();
    one.release();
    one.release();
    expect(admission.inFlight).toBe(1);
    await admission.admit();
    expect((await refusal(admission.admit())).metadata['limit']).toBe('queue_full');
  });

  it('refuses at once a call whose expected wait exceeds the bound, with that wait as the retry delay', async () => {
    const { admission, clock } = gate({ maxConcurrent: 2, maxQueue: 10, maxQueueWaitMs: 100 });
    // Two calls of 80 ms teach the gate its execution time.
    const t1 = await admission.admit();
    const t2 = await admission.admit();
    clock.advance(80);
    t1.release();
    t2.release();
    expect(admission.executionMs).toBe(80);
    await admission.admit();
    await admission.admit();
    // Positions 1 and 2 expect 40 and 80 ms; position 3 would wait 120 ms > 100.
    const queued = [admission.admit(), admission.admit()];
    expect(admission.queued).toBe(2);
    const refused = await refusal(admission.admit());
    expect(refused.metadata['limit']).toBe('queue_wait');
    expect(refused.retryDelayMs).toBe(120);
    expect(admission.queued).toBe(2);
    for (const p of queued) expect(await state(p)).toBe('pending');
  });

  it('keeps a queued call waiting past the bound when the estimate proves short, and admits it', async () => {
    const { admission, clock } = gate({ maxConcurrent: 1, maxQueue: 2, maxQueueWaitMs: 100 });
    const holder = await admission.admit();
    const waiting = admission.admit();
    clock.advance(100);
    expect(await state(waiting)).toBe('pending');
    clock.advance(150);
    holder.release();
    expect(await state(waiting)).toBe('resolved');
    expect(admission.inFlight).toBe(1);
    expect(admission.queued).toBe(0);
  });

  it('refuses a queued call only once executions stalled for the timeout factor times the bound, and forgets it', async () => {
    const { admission, clock } = gate({ maxConcurrent: 1, maxQueue: 2, maxQueueWaitMs: 100 });
    const holder = await admission.admit();
    const waiting = admission.admit();
    clock.advance(QUEUE_TIMEOUT_FACTOR * 100 - 1);
    expect(await state(waiting)).toBe('pending');
    clock.advance(1);
    const refused = await refusal(waiting);
    expect(refused.metadata['limit']).toBe('queue_timeout');
    expect(admission.queued).toBe(0);
    holder.release();
    expect(admission.inFlight).toBe(0);
  });

  it('lets a cancelled queued call leave the queue at once, with its signal reason', async () => {
    const { admission, clock } = gate({ maxConcurrent: 1, maxQueue: 1 });
    const holder = await admission.admit();
    const controller = new AbortController();
    const waiting = admission.admit(controller.signal);
    expect(admission.queued).toBe(1);
    const reason = new ConnectError('cancelled by the client', Code.Canceled);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(admission.queued).toBe(0);
    expect(clock.pending).toBe(0);
    // Its place is free for another call, and the holder's release reaches nobody stale.
    const next = admission.admit();
    holder.release();
    (await next).release();
    expect(admission.inFlight).toBe(0);
  });

  it('never admits a call whose signal already ended', async () => {
    const { admission } = gate();
    const controller = new AbortController();
    controller.abort(new ConnectError('deadline', Code.DeadlineExceeded));
    await expect(admission.admit(controller.signal)).rejects.toBeInstanceOf(ConnectError);
    expect(admission.inFlight).toBe(0);
  });

  it('admits everything when maxConcurrent is 0', async () => {
    const { admission } = gate({ maxConcurrent: 0, maxQueue: 0 });
    for (let i = 0; i < 100; i++) await admission.admit();
    expect(admission.inFlight).toBe(0);
  });

  it('is sent as RESOURCE_EXHAUSTED OVERLOADED with a google.rpc.RetryInfo', async () => {
    const { admission } = gate({ maxConcurrent: 1, maxQueue: 0 });
    await admission.admit();
    const refused = await refusal(admission.admit());
    const wire = toConnectError(refused, { domain: 'engram.retrieval', requestId: 'r1' }).error;
    expect(wire.code).toBe(Code.ResourceExhausted);
    expect(errorInfoOf(wire)?.reason).toBe('OVERLOADED');
    const retry = wire.findDetails(RetryInfoSchema)[0];
    expect((retry?.retryDelay?.nanos ?? 0) / 1e6 + Number(retry?.retryDelay?.seconds ?? 0) * 1000).toBe(
      refused.retryDelayMs,
    );
  });

  it('counts admissions and refusals, and samples its queue depth', async () => {
    const registry = metricsRegistry();
    const metrics = scopedMetrics(registry);
    const method = 'test.v1.T/CountMe';
    const clock = new FakeClock();
    const counted = processAdmission(
      metrics,
      method,
      { maxConcurrent: 1, maxQueue: 1, maxQueueWaitMs: 50 },
      clock,
    );
    await counted.admit();
    void counted.admit();
    await refusal(counted.admit());
    const { admitted: admittedTotal, refused } = admissionMetrics(registry);
    expect((await admittedTotal.get()).values.find((v) => v.labels['method'] === method)?.value).toBe(1);
    expect(
      (await refused.get()).values.find(
        (v) => v.labels['method'] === method && v.labels['limit'] === 'queue_full',
      )?.value,
    ).toBe(1);
    const depth = await registry.getSingleMetric('engram_admission_queue_depth')?.get();
    expect(depth?.values.find((v) => v.labels['method'] === method)?.value).toBe(1);
    metrics.dispose();
  });
});

describe('ProcessAdmission with a target execution time', () => {
  /** Runs one window: fills every slot (and `extra` waiters), lets `ms` pass, releases them all. */
  async function window(
    clock: FakeClock,
    admission: ProcessAdmission,
    ms: number,
    extra = 0,
  ): Promise<number> {
    const tickets: AdmissionTicket[] = [];
    for (let i = 0; i < admission.slots; i++) tickets.push(await admission.admit());
    const waiting = Array.from({ length: extra }, () => admission.admit().catch(() => undefined));
    clock.advance(ms);
    for (const ticket of tickets) ticket.release();
    for (const ticket of await Promise.all(waiting)) ticket?.release();
    return admission.slots;
  }

  const adaptive = (limits: Partial<ProcessAdmissionLimits> = {}) =>
    gate({ maxConcurrent: 8, maxQueue: 64, maxQueueWaitMs: 10_000, targetExecutionMs: 100, ...limits });

  it('shrinks its slots by a quarter per window while executions are slower than the target, down to minConcurrent', async () => {
    const { clock, admission } = adaptive({ minConcurrent: 2 });
    expect(admission.slots).toBe(8);
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) seen.push(await window(clock, admission, 250));
    expect(seen).toEqual([6, 4, 3, 2, 2, 2]);
  });

  it('changes its slots at most once per average execution time', async () => {
    const { clock, admission } = adaptive();
    const tickets = await Promise.all(Array.from({ length: 8 }, () => admission.admit()));
    clock.advance(250);
    // Eight slow calls end together: one decision, not eight.
    for (const ticket of tickets) ticket.release();
    expect(admission.slots).toBe(6);
  });

  it('grows back by one per window while executions are within the target and calls have to wait', async () => {
    const { clock, admission } = adaptive({ minConcurrent: 1 });
    for (let i = 0; i < 8; i++) await window(clock, admission, 400);
    expect(admission.slots).toBe(1);
    const seen: number[] = [];
    for (let i = 0; i < 40; i++) seen.push(await window(clock, admission, 20, 1));
    // The moving average has to come down first; from then on one slot more per window.
    const growth = seen.filter((slots, i) => slots !== (seen[i - 1] ?? 1));
    expect(growth).toEqual([2, 3, 4, 5, 6, 7, 8]);
    expect(Math.max(...seen)).toBe(8);
  });

  it('does not grow while nobody waits, however fast the calls are', async () => {
    const { clock, admission } = adaptive();
    for (let i = 0; i < 3; i++) await window(clock, admission, 400);
    const shrunk = admission.slots;
    for (let i = 0; i < 20; i++) {
      const ticket = await admission.admit();
      clock.advance(10);
      ticket.release();
    }
    expect(admission.slots).toBe(shrunk);
  });

  it('bases the expected wait and the refusal on the slots it has now', async () => {
    const { clock, admission } = adaptive({ minConcurrent: 2, maxQueueWaitMs: 300 });
    for (let i = 0; i < 4; i++) await window(clock, admission, 250);
    expect(admission.slots).toBe(2);
    await admission.admit();
    await admission.admit();
    // Two slots at an average of 250 ms: the third waiter expects 375 ms, beyond the 300 ms bound.
    void admission.admit();
    void admission.admit();
    const refused = await refusal(admission.admit());
    expect(refused.metadata['limit']).toBe('queue_wait');
    expect(refused.metadata['slots']).toBe(2);
    expect(refused.metadata['max_concurrent']).toBe(8);
    expect(refused.retryDelayMs).toBe(Math.ceil((3 * (admission.executionMs ?? 0)) / 2));
  });

  it('keeps maxConcurrent slots without a target, however slow the calls are', async () => {
    const { clock, admission } = adaptive({ targetExecutionMs: 0 });
    for (let i = 0; i < 5; i++) await window(clock, admission, 1000);
    expect(admission.slots).toBe(8);
  });
});

describe('admitted', () => {
  const context = (signal: AbortSignal) => ({ signal }) as unknown as HandlerContext;

  it('holds the slot while the handler runs and releases it when it fails', async () => {
    const { admission } = gate({ maxConcurrent: 1, maxQueue: 0 });
    let inside = -1;
    const failing = admitted(admission, () => {
      inside = admission.inFlight;
      throw new Error('boom');
    });
    await expect(failing({}, context(new AbortController().signal))).rejects.toThrow('boom');
    expect(inside).toBe(1);
    expect(admission.inFlight).toBe(0);
  });

  it('answers with the handler result once a slot frees', async () => {
    const { admission } = gate({ maxConcurrent: 1, maxQueue: 1 });
    const holder = await admission.admit();
    const handler = admitted(admission, (request: { n: number }) => ({ doubled: request.n * 2 }));
    const answer = handler({ n: 21 }, context(new AbortController().signal));
    expect(await state(answer)).toBe('pending');
    holder.release();
    await expect(answer).resolves.toEqual({ doubled: 42 });
    expect(admission.inFlight).toBe(0);
  });
});
