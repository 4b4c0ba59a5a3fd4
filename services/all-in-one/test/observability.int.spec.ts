import { Writable } from 'node:stream';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Client, type CallOptions } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, describe, expect, it } from '@jest/globals';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService, MemCellStatus, MessageRole } from '@engram/contracts/ingestion';
import { createGovernanceServer, loadConfig as governanceConfig } from '@engram/governance';
import { createIngestionServer, loadConfig as ingestionConfig } from '@engram/ingestion';
import type { EngramServer } from '@engram/runtime';
import { freePorts } from '@engram/testing';
import { authorized, migratedDataDir, newSecret, serviceSecretOf, startServer } from './harness.js';

const secret = newSecret();
const servers: EngramServer[] = [];

afterAll(async () => {
  for (const server of servers.reverse()) await server.shutdown();
});

const auth = () => authorized(secret, { subject: 'alice', tenantId: 'acme' });

/** One user turn in a new session, flushed with extraction (which must succeed); the session and its MemCell. */
async function extractedTurn(ingestion: Client<typeof IngestionService>, options: CallOptions) {
  const { session } = await ingestion.createSession({ session: { timeZone: 'UTC' } }, options);
  await ingestion.appendMessages(
    {
      parent: session!.name,
      messages: [
        {
          role: MessageRole.USER,
          content: 'From now on please answer more concisely.',
          occurTime: timestampFromMs(Date.now() - 60_000),
        },
      ],
    },
    options,
  );
  const { memCell } = await ingestion.flushSession(
    { name: session!.name, waitForExtraction: true, extractionWaitTimeout: { seconds: 30n } },
    options,
  );
  expect(memCell?.status).toBe(MemCellStatus.EXTRACTED);
  return { session: session!, memCell: memCell! };
}

/** A pino destination that keeps the parsed JSON lines. */
function logCapture() {
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      partial += chunk.toString();
      let newline: number;
      while ((newline = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, newline);
        partial = partial.slice(newline + 1);
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { destination, lines };
}

/** Sample lines `name{labels} value` of a Prometheus text exposition, parsed. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const found: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!;
    }
    found.push({ labels, value: Number(match[3]) });
  }
  return found;
}

describe('Prometheus metrics of the all-in-one process', () => {
  it('serves RPC counts and latency by method and code, outbox, index-lag and extraction-job gauges', async () => {
    const { server, ingestion, retrieval } = await startServer(secret, { env: { ENGRAM_METRICS_PORT: '0' } });
    servers.push(server);
    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const options = await auth();
    const { session } = await extractedTurn(ingestion, options);
    // Failing calls: a malformed name, and no credential (refused before any handler).
    const fails = async (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        (error: unknown) => ConnectError.from(error).code,
      );
    expect(await fails(ingestion.getSession({ name: 'sessions/not a name' }, options))).toBe(
      Code.InvalidArgument,
    );
    expect(await fails(ingestion.getSession({ name: session.name }))).toBe(Code.Unauthenticated);
    // A search embeds its query with the local model.
    await retrieval.search({ query: 'how should answers be written?' }, options);

    const response = await fetch(server.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();

    const requests = samples(text, 'engram_rpc_requests_total');
    const count = (method: string, code: string) =>
      requests.find((s) => s.labels['method'] === method && s.labels['code'] === code)?.value;
    expect(count('engram.ingestion.v1.IngestionService/CreateSession', 'OK')).toBe(1);
    expect(count('engram.ingestion.v1.IngestionService/FlushSession', 'OK')).toBe(1);
    expect(count('engram.ingestion.v1.IngestionService/GetSession', 'INVALID_ARGUMENT')).toBe(1);
    expect(count('engram.ingestion.v1.IngestionService/GetSession', 'UNAUTHENTICATED')).toBe(1);
    // The hand-off to governance goes through the in-process transport and is counted too.
    expect(count('engram.governance.v1.GovernanceService/ExtractMemories', 'OK')).toBeGreaterThanOrEqual(1);
    const buckets = samples(text, 'engram_rpc_duration_seconds_bucket').filter(
      (s) => s.labels['method'] === 'engram.ingestion.v1.IngestionService/GetSession',
    );
    expect(
      buckets.find((s) => s.labels['le'] === '+Inf' && s.labels['code'] === 'UNAUTHENTICATED')?.value,
    ).toBe(1);
    expect(buckets.length).toBeGreaterThan(2);

    const depth = samples(text, 'engram_outbox_depth');
    expect(depth.map((s) => s.labels['state']).sort()).toEqual(['parked', 'pending', 'retrying']);
    for (const s of depth) expect(s.value).toBeGreaterThanOrEqual(0);
    expect(samples(text, 'engram_outbox_oldest_age_seconds')).toHaveLength(1);
    expect(samples(text, 'engram_index_lag_seconds')).toHaveLength(1);
    const jobs = samples(text, 'engram_extraction_jobs');
    expect(jobs.find((s) => s.labels['state'] === 'SUCCEEDED')?.value).toBeGreaterThanOrEqual(1);
    expect(jobs.map((s) => s.labels['state'])).toEqual(
      expect.arrayContaining(['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED']),
    );
    const embedded = samples(text, 'engram_embedding_texts_total');
    expect(embedded.length).toBeGreaterThanOrEqual(1);
    expect(embedded[0]?.value).toBeGreaterThanOrEqual(1);
    expect(samples(text, 'engram_embedding_batch_duration_seconds_count').length).toBeGreaterThanOrEqual(1);
    // The default process metrics are there too.
    expect(text).toContain('process_cpu_user_seconds_total');

    // Anything else on the metrics port is not found.
    expect((await fetch(server.metricsUrl!.replace(/\/metrics$/, '/'))).status).toBe(404);
    await server.shutdown();
    await expect(fetch(server.metricsUrl!)).rejects.toThrow();
  }, 90_000);
});

describe('tracing across separate services', () => {
  it('carries one trace id from ingestion to governance, in the log lines of both', async () => {
    const dataDir = await migratedDataDir();
    const governanceLogs = logCapture();
    const ingestionLogs = logCapture();
    const [ingestionPort = 0] = await freePorts(1);
    const { server: governanceServer } = await createGovernanceServer(
      governanceConfig({
        ENGRAM_PORT: '0',
        ENGRAM_INGESTION_URL: `http://127.0.0.1:${ingestionPort}`,
        ENGRAM_JWT_SECRET: secret,
        ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_LOG_LEVEL: 'info',
        ENGRAM_METRICS_PORT: 'off',
      }),
      { handleSignals: false, logDestination: governanceLogs.destination },
    );
    servers.push(governanceServer);
    const { server: ingestionServer } = await createIngestionServer(
      ingestionConfig({
        ENGRAM_PORT: String(ingestionPort),
        ENGRAM_JWT_SECRET: secret,
        ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_LOG_LEVEL: 'info',
        ENGRAM_METRICS_PORT: 'off',
        ENGRAM_GOVERNANCE_URL: governanceServer.url,
      }),
      { handleSignals: false, logDestination: ingestionLogs.destination },
    );
    servers.push(ingestionServer);
    expect(ingestionServer.metricsUrl).toBeUndefined();

    const ingestion = createClient(IngestionService, createGrpcTransport({ baseUrl: ingestionServer.url }));
    const options = await auth();
    // FlushSession closes the MemCell and wakes the hand-off, which calls governance.
    const { memCell } = await extractedTurn(ingestion, options);
    const governance = createClient(
      GovernanceService,
      createGrpcTransport({ baseUrl: governanceServer.url }),
    );
    await governance.getExtractionJob({ name: memCell.extractionJob }, options);

    const rpc = (lines: Record<string, unknown>[], method: string) =>
      lines.find((line) => line['msg'] === 'rpc' && String(line['method']).endsWith(method));
    const flush = rpc(ingestionLogs.lines, 'IngestionService/FlushSession');
    const extract = rpc(governanceLogs.lines, 'GovernanceService/ExtractMemories');
    expect(flush?.['trace_id']).toMatch(/^[0-9a-f]{32}$/);
    expect(extract?.['trace_id']).toBe(flush?.['trace_id']);
    // Not the same span: governance's server span is a child of ingestion's client span.
    expect(extract?.['span_id']).not.toBe(flush?.['span_id']);
    // Governance reads the MemCell back from ingestion within the same trace.
    const traceId = flush?.['trace_id'];
    expect(rpc(ingestionLogs.lines, 'IngestionService/GetMemCell')?.['trace_id']).toBe(traceId);
    // Lines written inside a handler carry the trace id too (the hand-off's own log line).
    expect(
      ingestionLogs.lines.some((line) => line['msg'] === 'memcell extracted' && line['trace_id'] === traceId),
    ).toBe(true);
    // An unrelated call is another trace.
    const get = rpc(governanceLogs.lines, 'GovernanceService/GetExtractionJob');
    expect(get?.['trace_id']).toMatch(/^[0-9a-f]{32}$/);
    expect(get?.['trace_id']).not.toBe(traceId);
  }, 90_000);
});
