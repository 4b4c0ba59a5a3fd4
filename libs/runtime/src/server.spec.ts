import { randomBytes } from 'node:crypto';
import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type HandlerContext,
} from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { GovernanceService } from '@engram/contracts/governance';
import { Health, HealthCheckResponse_ServingStatus, ServerReflection } from '@engram/contracts/grpc';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { errorInfoOf, errors } from '@engram/errors';
import { createLogger } from '@engram/telemetry';
import { createAuthenticator, mintToken, principalKey, type Principal } from './auth.js';
import { createInProcessTransport, forwardedCallOptions } from './clients.js';
import { requestIdKey } from './context-keys.js';
import { HealthRegistry, createHealthService } from './health.js';
import { registration, type RoutingOptions, type ServiceRegistration } from './server.js';

const secret = randomBytes(32);
const logger = createLogger({ service: 'test', level: 'silent' });
const limits = { maxMessageBytes: 1 << 20, maxStreamMessages: 3, maxTimeoutMs: 60_000 };

async function routing(services: ServiceRegistration[]): Promise<() => RoutingOptions> {
  const authenticate = await createAuthenticator({ mode: 'hs256', secret, clockToleranceSec: 0 });
  return () => ({ services, authenticate, logger, limits });
}

const bearer = async (subject = 'alice') =>
  `Bearer ${await mintToken({ subject, tenantId: 't1', orgIds: ['o1'] }, { algorithm: 'HS256', secret })}`;

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

describe('the server interceptor', () => {
  it('answers a call without a token with UNAUTHENTICATED and reason TOKEN_MISSING', async () => {
    const transport = createInProcessTransport(await routing([registration(GovernanceService, {})]));
    const error = await failure(createClient(GovernanceService, transport).getMemory({ name: 'memories/x' }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(errorInfoOf(error)).toMatchObject({ reason: 'TOKEN_MISSING', domain: 'engram.governance' });
  });

  it('answers an authenticated call to a method not built yet with UNIMPLEMENTED and NOT_IMPLEMENTED', async () => {
    const transport = createInProcessTransport(await routing([registration(GovernanceService, {})]));
    const error = await failure(
      createClient(GovernanceService, transport).getMemory(
        { name: 'memories/x' },
        { headers: { authorization: await bearer() } },
      ),
    );
    expect(error.code).toBe(Code.Unimplemented);
    expect(error.rawMessage).toContain('engram.governance.v1.GovernanceService.GetMemory is not implemented');
    expect(errorInfoOf(error)).toMatchObject({
      reason: 'NOT_IMPLEMENTED',
      metadata: { method: 'engram.governance.v1.GovernanceService.GetMemory' },
    });
  });

  it('gives handlers the verified principal and maps domain errors to their code and reason', async () => {
    let seen: Principal | undefined;
    const service = registration(GovernanceService, {
      getMemory(request, context) {
        seen = context.values.get(principalKey);
        throw errors.notFound(request.name);
      },
    });
    const transport = createInProcessTransport(await routing([service]));
    const error = await failure(
      createClient(GovernanceService, transport).getMemory(
        { name: 'memories/m1' },
        { headers: { authorization: await bearer('bob') } },
      ),
    );
    expect(seen).toMatchObject({ subject: 'bob', tenantId: 't1', orgIds: ['o1'] });
    expect(error.code).toBe(Code.NotFound);
    expect(errorInfoOf(error)).toMatchObject({
      reason: 'RESOURCE_NOT_FOUND',
      metadata: { name: 'memories/m1' },
    });
  });

  it('turns an unexpected exception into INTERNAL without leaking its message', async () => {
    const service = registration(GovernanceService, {
      getMemory() {
        throw new Error('db password is hunter2');
      },
    });
    const transport = createInProcessTransport(await routing([service]));
    const error = await failure(
      createClient(GovernanceService, transport).getMemory(
        { name: 'memories/m1' },
        { headers: { authorization: await bearer() } },
      ),
    );
    expect(error.code).toBe(Code.Internal);
    expect(error.message).not.toContain('hunter2');
    expect(errorInfoOf(error)?.metadata['request_id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses a client stream longer than the limit with RESOURCE_EXHAUSTED STREAM_TOO_LONG', async () => {
    let received = 0;
    const service = registration(IngestionService, {
      async *streamIngestDocument(requests) {
        for await (const _ of requests) received += 1;
        yield {};
      },
    });
    const transport = createInProcessTransport(await routing([service]));
    const client = createClient(IngestionService, transport);
    async function* parts() {
      for (let i = 0; i < 5; i += 1) yield {};
    }
    const error = await failure(
      (async () => {
        for await (const _ of client.streamIngestDocument(parts(), {
          headers: { authorization: await bearer() },
        })) {
          // drain
        }
      })(),
    );
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(errorInfoOf(error)).toMatchObject({ reason: 'STREAM_TOO_LONG', metadata: { limit: '3' } });
    expect(received).toBe(3);
  });

  it('surfaces an abort caused by the deadline as DEADLINE_EXCEEDED, not INTERNAL', async () => {
    const lines: { method?: string; code?: string }[] = [];
    const captured = createLogger(
      { service: 'test', level: 'info' },
      {
        write: (line: string) => {
          lines.push(JSON.parse(line) as { method?: string; code?: string });
        },
      },
    );
    const service = registration(GovernanceService, {
      async getMemory(_request, context) {
        await new Promise((_resolve, reject) => {
          context.signal.addEventListener('abort', () => {
            reject(new DOMException('aborted', 'AbortError'));
          });
        });
        return {};
      },
    });
    const options = await routing([service]);
    const transport = createInProcessTransport(() => ({ ...options(), logger: captured }));
    const error = await failure(
      createClient(GovernanceService, transport).getMemory(
        { name: 'memories/m1' },
        { headers: { authorization: await bearer() }, timeoutMs: 50 },
      ),
    );
    expect(error.code).toBe(Code.DeadlineExceeded);
    // The client may give up first; the server's own verdict is in its log line.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(lines).toContainEqual(
      expect.objectContaining({
        method: 'engram.governance.v1.GovernanceService/GetMemory',
        code: 'DeadlineExceeded',
      }),
    );
  });
});

describe('forwardedCallOptions', () => {
  it("forwards the caller's credential, request id and remaining deadline to the next service", async () => {
    let downstream:
      { principal?: Principal | undefined; requestId: string; timeoutMs: number | undefined } | undefined;
    let upstreamRequestId = '';
    const retrieval = registration(RetrievalService, {
      search(_request, context) {
        downstream = {
          principal: context.values.get(principalKey),
          requestId: context.values.get(requestIdKey),
          timeoutMs: context.timeoutMs(),
        };
        return {};
      },
    });
    const governance = registration(GovernanceService, {
      async getMemory(_request, context: HandlerContext) {
        upstreamRequestId = context.values.get(requestIdKey);
        await createClient(RetrievalService, transport).search({ query: 'q' }, forwardedCallOptions(context));
        return {};
      },
    });
    const transport = createInProcessTransport(await routing([governance, retrieval]));
    await createClient(GovernanceService, transport).getMemory(
      { name: 'memories/m1' },
      { headers: { authorization: await bearer('carol'), 'x-request-id': 'req-42' }, timeoutMs: 5_000 },
    );
    expect(downstream?.principal).toMatchObject({ subject: 'carol', tenantId: 't1' });
    expect(upstreamRequestId).toBe('req-42');
    expect(downstream?.requestId).toBe('req-42');
    expect(downstream?.timeoutMs).toBeGreaterThan(0);
    expect(downstream?.timeoutMs).toBeLessThanOrEqual(5_000);
  });

  it('sends no credential when the incoming call had none (public services)', async () => {
    const options = forwardedCallOptions({
      values: { get: (key: { defaultValue: unknown }) => key.defaultValue },
      timeoutMs: () => undefined,
      signal: new AbortController().signal,
    } as unknown as HandlerContext);
    expect(options.headers).toBeInstanceOf(Headers);
    expect((options.headers as Headers).has('authorization')).toBe(false);
  });
});

describe('health', () => {
  it('reports each registered service and turns NOT_SERVING when draining', async () => {
    const registry = new HealthRegistry();
    registry.set('', HealthCheckResponse_ServingStatus.SERVING);
    registry.set(GovernanceService.typeName, HealthCheckResponse_ServingStatus.SERVING);
    const client = createClient(
      Health,
      createRouterTransport((router) => router.service(Health, createHealthService(registry))),
    );
    expect((await client.check({ service: GovernanceService.typeName })).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );
    const unknown = await failure(client.check({ service: 'nope.v1.Nope' }));
    expect(unknown.code).toBe(Code.NotFound);

    const controller = new AbortController();
    const seen: HealthCheckResponse_ServingStatus[] = [];
    const watching = (async () => {
      try {
        for await (const response of client.watch(
          { service: GovernanceService.typeName },
          { signal: controller.signal },
        )) {
          seen.push(response.status);
          if (seen.length === 1) registry.setAll(HealthCheckResponse_ServingStatus.NOT_SERVING);
          if (seen.length === 2) controller.abort();
        }
      } catch (error) {
        if (ConnectError.from(error).code !== Code.Canceled) throw error;
      }
    })();
    await watching;
    expect(seen).toEqual([
      HealthCheckResponse_ServingStatus.SERVING,
      HealthCheckResponse_ServingStatus.NOT_SERVING,
    ]);
    expect((await client.list({})).statuses['']?.status).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
  });
});

describe('reflection', () => {
  it('lists the mounted services and serves their files with dependencies', async () => {
    const transport = createInProcessTransport(await routing([registration(GovernanceService, {})]));
    const client = createClient(ServerReflection, transport);
    async function* one<T>(message: T) {
      yield message;
    }
    const responses = [];
    for await (const response of client.serverReflectionInfo(
      one({ messageRequest: { case: 'listServices' as const, value: '' } }),
    )) {
      responses.push(response);
    }
    const list = responses[0]?.messageResponse;
    expect(list?.case).toBe('listServicesResponse');
    const names = list?.case === 'listServicesResponse' ? list.value.service.map((s) => s.name) : [];
    expect(names).toEqual([GovernanceService.typeName, Health.typeName, ServerReflection.typeName]);

    const files = [];
    for await (const response of client.serverReflectionInfo(
      one({
        messageRequest: {
          case: 'fileContainingSymbol' as const,
          value: 'engram.governance.v1.GovernanceService.GetMemory',
        },
      }),
    )) {
      const answer = response.messageResponse;
      if (answer.case === 'fileDescriptorResponse') {
        files.push(
          ...answer.value.fileDescriptorProto.map(
            (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
          ),
        );
      }
    }
    expect(files[0]).toBe('engram/governance/v1/governance_service.proto');
    expect(files).toEqual(
      expect.arrayContaining(['engram/common/v1/scope.proto', 'google/protobuf/timestamp.proto']),
    );
  });
});
