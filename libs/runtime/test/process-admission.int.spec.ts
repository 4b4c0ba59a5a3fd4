import { Code, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RetryInfoSchema } from '@engram/contracts/grpc';
import { RetrievalService } from '@engram/contracts/retrieval';
import { ProcessAdmission, admitted, errorInfoOf, registration, type EngramServer } from '../src/index.js';
import { failure, serveOnLoopback } from './module-testbed.js';

// Process admission through real gRPC over a socket: a Search gate of one slot and one queue
// place, whose handler stays open until the test lets it answer.

const METHOD = `${RetrievalService.typeName}/${RetrievalService.method.search.name}`;
// Long enough never to fire during a test: the queue bound is not what these tests exercise.
const gate = new ProcessAdmission(
  { maxConcurrent: 1, maxQueue: 1, maxQueueWaitMs: 60_000 },
  { method: METHOD },
);
const held: (() => void)[] = [];
let entered = 0;
let server: EngramServer;
let headers: Record<string, string>;

beforeAll(async () => {
  let token: string;
  ({ server, token } = await serveOnLoopback([
    registration(RetrievalService, {
      search: admitted(gate, async () => {
        entered += 1;
        await new Promise<void>((resolve) => held.push(resolve));
        return { results: [] };
      }),
    }),
  ]));
  headers = { authorization: `Bearer ${token}` };
});
afterAll(async () => {
  for (const release of held) release();
  await server.shutdown();
});

const client = () => createClient(RetrievalService, createGrpcTransport({ baseUrl: server.url }));

/** Waits (bounded) until `condition` holds: the server's state, observed, never a sleep. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** Lets the oldest held handler answer. */
function releaseOne(): void {
  const release = held.shift();
  if (release === undefined) throw new Error('no handler is held');
  release();
}

describe('process admission over gRPC', () => {
  it('runs one call, queues the second and refuses the third with OVERLOADED and a RetryInfo', async () => {
    const retrieval = client();
    const first = retrieval.search({ query: 'one' }, { headers });
    await until(() => entered === 1, 'the first call runs');
    const second = retrieval.search({ query: 'two' }, { headers });
    await until(() => gate.queued === 1, 'the second call queues');

    const refused = await failure(retrieval.search({ query: 'three' }, { headers }));
    expect(refused.code).toBe(Code.ResourceExhausted);
    const info = errorInfoOf(refused);
    expect(info?.reason).toBe('OVERLOADED');
    expect(info?.domain).toBe('engram.retrieval');
    expect(info?.metadata).toMatchObject({
      method: METHOD,
      limit: 'queue_full',
      max_concurrent: '1',
      max_queue: '1',
    });
    const retry = refused.findDetails(RetryInfoSchema)[0];
    expect(retry?.retryDelay).toBeDefined();
    expect(Number(retry?.retryDelay?.seconds) * 1000 + (retry?.retryDelay?.nanos ?? 0) / 1e6).toBe(
      Number(info?.metadata['retry_after_ms']),
    );
    // The refusal took no place: the second call is still the only one waiting.
    expect(gate.queued).toBe(1);
    expect(entered).toBe(1);

    releaseOne();
    await expect(first).resolves.toBeDefined();
    await until(() => entered === 2, 'the queued call gets the slot');
    releaseOne();
    await expect(second).resolves.toBeDefined();
    expect(gate.inFlight).toBe(0);
  });

  it('frees the place of a queued call its client cancels', async () => {
    const retrieval = client();
    entered = 0;
    const first = retrieval.search({ query: 'one' }, { headers });
    await until(() => entered === 1, 'the first call runs');
    const controller = new AbortController();
    const cancelled = failure(retrieval.search({ query: 'two' }, { headers, signal: controller.signal }));
    await until(() => gate.queued === 1, 'the second call queues');
    controller.abort();
    expect((await cancelled).code).toBe(Code.Canceled);
    await until(() => gate.queued === 0, 'the cancelled call leaves the queue');

    // Its place is free again: a new call queues instead of being refused, and runs next.
    const third = retrieval.search({ query: 'three' }, { headers });
    await until(() => gate.queued === 1, 'the third call queues');
    releaseOne();
    await expect(first).resolves.toBeDefined();
    await until(() => entered === 2, 'the third call gets the slot');
    releaseOne();
    await expect(third).resolves.toBeDefined();
    expect(gate.inFlight).toBe(0);
    expect(gate.queued).toBe(0);
  });

  it('lets a queued call whose deadline passes leave with DEADLINE_EXCEEDED', async () => {
    const retrieval = client();
    entered = 0;
    const first = retrieval.search({ query: 'one' }, { headers });
    await until(() => entered === 1, 'the first call runs');
    const late = await failure(retrieval.search({ query: 'two' }, { headers, timeoutMs: 200 }));
    expect(late.code).toBe(Code.DeadlineExceeded);
    await until(() => gate.queued === 0, 'the expired call leaves the queue');
    expect(entered).toBe(1);
    releaseOne();
    await expect(first).resolves.toBeDefined();
    expect(gate.inFlight).toBe(0);
  });
});
