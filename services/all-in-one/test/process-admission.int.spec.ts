import { ConnectError, Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RetryInfoSchema } from '@engram/contracts/grpc';
import { MessageRole } from '@engram/contracts/ingestion';
import { errorInfoOf } from '@engram/runtime';
import { admissionMetrics, metricsRegistry } from '@engram/telemetry';
import { authorized, newSecret, startServer, type TestServer } from './harness.js';

// The process admission as the all-in-one mounts it (decision 0033): configured from the
// environment, around Search, BuildContext and AppendMessages, counted on the process's registry.
// Search gets one slot and no queue, so that a burst is partly refused.

const SEARCH = 'engram.retrieval.v1.RetrievalService/Search';
const BUILD_CONTEXT = 'engram.context.v1.ContextService/BuildContext';
const APPEND = 'engram.ingestion.v1.IngestionService/AppendMessages';
const secret = newSecret();
let server: TestServer;

beforeAll(async () => {
  server = await startServer(secret, {
    env: { ENGRAM_SEARCH_MAX_CONCURRENT: '1', ENGRAM_SEARCH_MAX_QUEUE: '0', ENGRAM_METRICS_PORT: 'off' },
  });
}, 120_000);
afterAll(async () => {
  await server.stop();
});

const metrics = admissionMetrics(metricsRegistry());

async function admitted(method: string): Promise<number> {
  return (await metrics.admitted.get()).values.find((v) => v.labels['method'] === method)?.value ?? 0;
}

async function refused(method: string): Promise<number> {
  const values = (await metrics.refused.get()).values.filter((v) => v.labels['method'] === method);
  return values.reduce((sum, v) => sum + v.value, 0);
}

describe('process admission in the all-in-one', () => {
  it('admits Search, BuildContext and AppendMessages through their gates', async () => {
    const options = await authorized(secret, { subject: 'alice', tenantId: 'acme' });
    const before = {
      search: await admitted(SEARCH),
      context: await admitted(BUILD_CONTEXT),
      append: await admitted(APPEND),
    };
    const { session } = await server.ingestion.createSession({ session: { timeZone: 'UTC' } }, options);
    await server.ingestion.appendMessages(
      { parent: session!.name, messages: [{ role: MessageRole.USER, content: 'We meet in Lisbon in May.' }] },
      options,
    );
    await server.retrieval.search({ query: 'where do we meet?' }, options);
    await server.context.buildContext(
      { session: session!.name, userMessage: 'Where do we meet?', budget: { totalTokens: 1_000 } },
      options,
    );
    expect(await admitted(APPEND)).toBe(before.append + 1);
    expect(await admitted(BUILD_CONTEXT)).toBe(before.context + 1);
    // The caller's Search and BuildContext's own (in-process, through the same gate).
    expect(await admitted(SEARCH)).toBe(before.search + 2);
    const depth = await metricsRegistry().getSingleMetric('engram_admission_queue_depth')?.get();
    expect(depth?.values.map((v) => v.labels['method']).sort()).toEqual(
      [BUILD_CONTEXT, APPEND, SEARCH].sort(),
    );
  });

  it('answers a burst beyond its one slot with OK or OVERLOADED and a RetryInfo, exactly as counted', async () => {
    const options = await authorized(secret, { subject: 'bob', tenantId: 'acme' });
    const before = { admitted: await admitted(SEARCH), refused: await refused(SEARCH) };
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        server.retrieval.search({ query: `burst query number ${i}` }, options).then(
          () => 'OK',
          (error: unknown) => {
            const e = ConnectError.from(error);
            const retry = e.findDetails(RetryInfoSchema)[0];
            if (e.code !== Code.ResourceExhausted || retry === undefined) return Code[e.code];
            return errorInfoOf(e)?.reason ?? 'no reason';
          },
        ),
      ),
    );
    expect(outcomes.every((o) => o === 'OK' || o === 'OVERLOADED')).toBe(true);
    expect(outcomes.filter((o) => o === 'OK').length).toBe((await admitted(SEARCH)) - before.admitted);
    expect(outcomes.filter((o) => o === 'OVERLOADED').length).toBe((await refused(SEARCH)) - before.refused);
    expect(outcomes).toContain('OK');
  });
});
