import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { createClient, type ServiceImpl } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, describe, expect, it } from '@jest/globals';
import { GovernanceService } from '@engram/contracts/governance';
import {
  ConfigError,
  DEFAULT_METRICS_PORT,
  mintToken,
  parseEnv,
  serviceModule,
  serve,
  serviceEnvSchema,
  type EngramServer,
} from '../src/index.js';

const secret = randomBytes(32).toString('hex');
const servers: EngramServer[] = [];
const blockers: Server[] = [];

afterAll(async () => {
  for (const server of servers) await server.shutdown();
  for (const blocker of blockers) await new Promise((resolve) => blocker.close(resolve));
});

/** Listens on `port` (0: a free one); resolves with the port, or undefined if it is taken. */
async function occupy(port: number): Promise<number | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => {
      resolve(undefined);
    });
    server.listen(port, '127.0.0.1', () => {
      blockers.push(server);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : undefined);
    });
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
  });
}

const start = (env: Record<string, string>, port: number) =>
  serve({
    name: 'metrics-test',
    env: parseEnv(serviceEnvSchema(0), { ENGRAM_JWT_SECRET: secret, ENGRAM_LOG_LEVEL: 'silent', ...env }),
    port,
    // One RPC is all this test calls; the others answer UNIMPLEMENTED.
    modules: () => [
      serviceModule(GovernanceService, {
        getMemory: (r) => ({ memory: { name: r.name } }),
      } as Partial<ServiceImpl<typeof GovernanceService>> as ServiceImpl<typeof GovernanceService>),
    ],
    handleSignals: false,
  });

describe('the metrics endpoint of serve()', () => {
  it('serves /metrics on a free port with ENGRAM_METRICS_PORT=0 and stops with the server', async () => {
    const { server } = await start({ ENGRAM_METRICS_PORT: '0' }, 0);
    servers.push(server);
    const token = await mintToken(
      { subject: 'alice', tenantId: 't1' },
      { algorithm: 'HS256', secret: new TextEncoder().encode(secret) },
    );
    await createClient(GovernanceService, createGrpcTransport({ baseUrl: server.url })).getMemory(
      { name: 'memories/m1' },
      { headers: { authorization: `Bearer ${token}` } },
    );
    const text = await (await fetch(server.metricsUrl!)).text();
    expect(text).toContain(
      'engram_rpc_requests_total{method="engram.governance.v1.GovernanceService/GetMemory",code="OK"} 1',
    );
    await server.shutdown();
    await expect(fetch(server.metricsUrl!)).rejects.toThrow();
  });

  it('serves no metrics with ENGRAM_METRICS_PORT=off', async () => {
    const { server } = await start({ ENGRAM_METRICS_PORT: 'off' }, 0);
    servers.push(server);
    expect(server.metricsUrl).toBeUndefined();
  });

  it('refuses to start when the configured metrics port is taken, naming the variable', async () => {
    const taken = await occupy(0);
    const error = await start({ ENGRAM_METRICS_PORT: String(taken) }, 0).then(
      ({ server }) => {
        servers.push(server);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems[0]?.variable).toBe('ENGRAM_METRICS_PORT');
  });

  it('falls back to a free port when the default port is taken (several processes on one host)', async () => {
    // Taken by this test, or already by another process: either way not available.
    await occupy(DEFAULT_METRICS_PORT);
    const { server } = await start({}, await freePort());
    servers.push(server);
    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(server.metricsUrl).not.toContain(`:${DEFAULT_METRICS_PORT}/`);
    expect((await fetch(server.metricsUrl!)).status).toBe(200);
  });
});
