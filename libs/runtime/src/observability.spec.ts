import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Code, ConnectError, createClient, type HandlerContext } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { errors } from '@engram/errors';
import { createLogger, grpcCodeName, registerSampledGauge, rpcMetrics } from '@engram/telemetry';
import { createAuthenticator, mintToken } from './auth.js';
import { createInProcessTransport, forwardedCallOptions } from './clients.js';
import { registration, type RoutingOptions, type ServiceRegistration } from './server.js';
import { activeTraceFields, withoutTrace } from './tracing.js';

const secret = randomBytes(32);
const limits = { maxMessageBytes: 1 << 20, maxStreamMessages: 10, maxTimeoutMs: 60_000 };

/** A logger whose JSON lines are kept. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: createLogger({ service: 'test', level: 'info' }, destination), lines };
}

async function setup(services: ServiceRegistration[]) {
  const registry = new Registry();
  const metrics = rpcMetrics(registry);
  const { logger, lines } = capturedLogger();
  const authenticate = await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 });
  const routing: RoutingOptions = { services, authenticate, logger, limits, metrics };
  const transport = createInProcessTransport(() => routing);
  const headers = {
    authorization: `Bearer ${await mintToken({ subject: 'alice', tenantId: 't1' }, { algorithm: 'HS256', secret })}`,
  };
  /** The value of one sample of the registry's text output, or undefined. */
  const sample = async (name: string, labels: Record<string, string>) => {
    const json = await registry.getMetricsAsJSON();
    for (const metric of json) {
      for (const value of metric.values) {
        const seriesName = (value as { metricName?: string }).metricName ?? metric.name;
        if (seriesName !== name) continue;
        if (Object.entries(labels).every(([k, v]) => String(value.labels[k]) === v)) return value.value;
      }
    }
    return undefined;
  };
  return { transport, headers, sample, lines, registry };
}

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

const GET_MEMORY = 'engram.governance.v1.GovernanceService/GetMemory';

describe('RPC metrics', () => {
  it('counts OK and failed calls by method and gRPC code name, with a latency histogram', async () => {
    const service = registration(GovernanceService, {
      getMemory(request) {
        if (request.name === 'memories/missing') throw errors.notFound(request.name);
        if (request.name === 'memories/broken') throw new Error('a bug');
        return { memory: { name: request.name } };
      },
    });
    const { transport, headers, sample } = await setup([service]);
    const client = createClient(GovernanceService, transport);
    await client.getMemory({ name: 'memories/m1' }, { headers });
    await client.getMemory({ name: 'memories/m2' }, { headers });
    expect((await failure(client.getMemory({ name: 'memories/missing' }, { headers }))).code).toBe(
      Code.NotFound,
    );
    // An unknown failure becomes INTERNAL at the error boundary, and is counted as such.
    expect((await failure(client.getMemory({ name: 'memories/broken' }, { headers }))).code).toBe(
      Code.Internal,
    );
    // Refused by authentication, before any handler ran.
    await failure(client.getMemory({ name: 'memories/m1' }));

    expect(await sample('engram_rpc_requests_total', { method: GET_MEMORY, code: 'OK' })).toBe(2);
    expect(await sample('engram_rpc_requests_total', { method: GET_MEMORY, code: 'NOT_FOUND' })).toBe(1);
    expect(await sample('engram_rpc_requests_total', { method: GET_MEMORY, code: 'INTERNAL' })).toBe(1);
    expect(await sample('engram_rpc_requests_total', { method: GET_MEMORY, code: 'UNAUTHENTICATED' })).toBe(
      1,
    );
    expect(await sample('engram_rpc_duration_seconds_count', { method: GET_MEMORY, code: 'OK' })).toBe(2);
    expect(
      await sample('engram_rpc_duration_seconds_bucket', { method: GET_MEMORY, code: 'OK', le: '+Inf' }),
    ).toBe(2);
    expect(await sample('engram_rpc_duration_seconds_count', { method: GET_MEMORY, code: 'NOT_FOUND' })).toBe(
      1,
    );
  });

  it('measures a streamed response to its end, with the code of a failure in mid-stream', async () => {
    const service = registration(ContextService, {
      async *chat(request) {
        yield { event: { case: 'delta' as const, value: { text: 'a' } } };
        if (request.session === 'sessions/cut') throw errors.unavailable('engram.model', 'cut');
        yield { event: { case: 'delta' as const, value: { text: 'b' } } };
      },
    });
    const { transport, headers, sample } = await setup([service]);
    const client = createClient(ContextService, transport);
    const received: unknown[] = [];
    for await (const message of client.chat({ session: 'sessions/s1' }, { headers })) received.push(message);
    expect(received).toHaveLength(2);
    const cut = await failure(
      (async () => {
        for await (const _ of client.chat({ session: 'sessions/cut' }, { headers })) {
          // read to the failure
        }
      })(),
    );
    expect(cut.code).toBe(Code.Unavailable);
    const method = 'engram.context.v1.ContextService/Chat';
    expect(await sample('engram_rpc_requests_total', { method, code: 'OK' })).toBe(1);
    expect(await sample('engram_rpc_requests_total', { method, code: 'UNAVAILABLE' })).toBe(1);
  });

  it('names codes as gRPC does', () => {
    expect(grpcCodeName(undefined)).toBe('OK');
    expect(grpcCodeName(Code.InvalidArgument)).toBe('INVALID_ARGUMENT');
    expect(grpcCodeName(Code.Canceled)).toBe('CANCELLED');
    expect(grpcCodeName(Code.DeadlineExceeded)).toBe('DEADLINE_EXCEEDED');
  });
});

describe('sampled gauges', () => {
  it('reads every source at scrape time, adds them up, and forgets a removed source', async () => {
    const registry = new Registry();
    const spec = (value: number) => ({
      name: 'engram_test_depth',
      help: 'test',
      labelNames: ['state'],
      sample: () => Promise.resolve([{ labels: { state: 'pending' }, value }]),
    });
    registerSampledGauge(registry, spec(2));
    const remove = registerSampledGauge(registry, spec(3));
    registerSampledGauge(registry, {
      ...spec(0),
      sample: () => Promise.reject(new Error('database closed')),
    });
    expect(await registry.metrics()).toContain('engram_test_depth{state="pending"} 5');
    remove();
    expect(await registry.metrics()).toContain('engram_test_depth{state="pending"} 2');
  });
});

describe('trace context', () => {
  it('logs the trace id of the call, and a downstream call in-process joins the same trace', async () => {
    let downstreamTraceparent: string | null = null;
    const governance = registration(GovernanceService, {
      getMemory(_request, context) {
        downstreamTraceparent = context.requestHeader.get('traceparent');
        return { memory: { name: 'memories/m1' } };
      },
    });
    const routingServices: ServiceRegistration[] = [governance];
    const { transport, headers, lines } = await setup(routingServices);
    routingServices.push(
      registration(ContextService, {
        async getSessionState(_request, context: HandlerContext) {
          await createClient(GovernanceService, transport).getMemory(
            { name: 'memories/m1' },
            forwardedCallOptions(context),
          );
          return {};
        },
      }),
    );
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    await createClient(ContextService, transport).getSessionState(
      { name: 'sessions/s1/state' },
      { headers: { ...headers, traceparent: `00-${callerTrace}-b7ad6b7169203331-01` } },
    );
    expect(downstreamTraceparent).toMatch(new RegExp(`^00-${callerTrace}-[0-9a-f]{16}-01$`));
    const rpcLines = lines.filter((line) => line['msg'] === 'rpc');
    expect(rpcLines.map((line) => line['method'])).toEqual([
      GET_MEMORY,
      'engram.context.v1.ContextService/GetSessionState',
    ]);
    for (const line of rpcLines) expect(line['trace_id']).toBe(callerTrace);
    // Each server span has its own span id.
    expect(new Set(rpcLines.map((line) => line['span_id'])).size).toBe(2);
  });

  it('starts a new trace for a call that carries none', async () => {
    const { transport, headers, lines } = await setup([
      registration(GovernanceService, { getMemory: () => ({ memory: { name: 'memories/m1' } }) }),
    ]);
    const client = createClient(GovernanceService, transport);
    await client.getMemory({ name: 'memories/m1' }, { headers });
    await client.getMemory({ name: 'memories/m1' }, { headers });
    const ids = lines.filter((line) => line['msg'] === 'rpc').map((line) => line['trace_id']);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(ids[0]).not.toBe(ids[1]);
  });

  it('lets background work leave the trace of the request that started it', async () => {
    let inside: ReturnType<typeof activeTraceFields> = {};
    let detached: ReturnType<typeof activeTraceFields> = {};
    const { transport, headers } = await setup([
      registration(GovernanceService, {
        getMemory() {
          inside = activeTraceFields();
          detached = withoutTrace(() => activeTraceFields());
          return { memory: { name: 'memories/m1' } };
        },
      }),
    ]);
    await createClient(GovernanceService, transport).getMemory({ name: 'memories/m1' }, { headers });
    expect(inside.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(detached).toEqual({});
  });
});
