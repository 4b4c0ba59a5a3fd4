import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ErrorReason } from '@engram/contracts/common';
import { GovernanceService, MemoryType } from '@engram/contracts/governance';
import { IngestionService, MemCellStatus, MessageRole } from '@engram/contracts/ingestion';
import { createGovernanceServer, loadConfig as governanceConfig } from '@engram/governance';
import { createIngestionServer, loadConfig as ingestionConfig } from '@engram/ingestion';
import type { EngramServer } from '@engram/runtime';
import { freePorts } from '@engram/testing';
import { migratedDataDir, newSecret, serviceSecretOf, tokenFor } from './harness.js';

const secret = newSecret();
let dataDir: string;
const DAY = 24 * 60 * 60 * 1000;
let ingestionServer: EngramServer;
let governanceServer: EngramServer | undefined;
let governancePort: number;
let ingestion: Client<typeof IngestionService>;
let headers: Record<string, string>;

beforeAll(async () => {
  dataDir = await migratedDataDir();
  // Free a moment ago: governance will listen there later.
  [governancePort = 0] = await freePorts(1);
  ({ server: ingestionServer } = await createIngestionServer(
    ingestionConfig({
      ENGRAM_PORT: '0',
      ENGRAM_JWT_SECRET: secret,
      ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_LOG_LEVEL: 'silent',
      ENGRAM_GOVERNANCE_URL: `http://127.0.0.1:${governancePort}`,
    }),
    { handleSignals: false },
  ));
  ingestion = createClient(IngestionService, createGrpcTransport({ baseUrl: ingestionServer.url }));
  headers = { authorization: `Bearer ${await tokenFor(secret, { subject: 'alice', tenantId: 'acme' })}` };
}, 60_000);

afterAll(async () => {
  await ingestionServer.shutdown();
  await governanceServer?.shutdown();
});

describe('the MemCell hand-off between separate ingestion and governance processes', () => {
  it('keeps a MemCell pending while governance is down, and extracts it once governance answers', async () => {
    const { session } = await ingestion.createSession(
      { session: { timeZone: 'Asia/Shanghai' } },
      { headers },
    );
    const said = Date.now() - 60_000;
    await ingestion.appendMessages(
      {
        parent: session!.name,
        messages: [
          {
            role: MessageRole.USER,
            content:
              'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
            occurTime: timestampFromMs(said),
          },
        ],
      },
      { headers },
    );
    const { memCell } = await ingestion.flushSession({ name: session!.name }, { headers });
    const get = async () => (await ingestion.getMemCell({ name: memCell!.name }, { headers })).memCell!;

    // Governance is not listening: the attempt fails, is recorded, and a retry is scheduled.
    let cell = await get();
    for (let i = 0; i < 100 && cell.attempts < 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      cell = await get();
    }
    for (let i = 0; i < 50 && cell.status !== MemCellStatus.PENDING; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      cell = await get();
    }
    expect(cell.status).toBe(MemCellStatus.PENDING);
    expect(cell.attempts).toBeGreaterThanOrEqual(1);
    expect(cell.lastErrorReason).toBe(ErrorReason.DEPENDENCY_UNAVAILABLE);
    expect(cell.nextAttemptTime).toBeDefined();

    // Governance comes up on the configured address: the next attempt extracts the memories.
    ({ server: governanceServer } = await createGovernanceServer(
      governanceConfig({
        ENGRAM_PORT: String(governancePort),
        ENGRAM_JWT_SECRET: secret,
        ENGRAM_SERVICE_JWT_SECRET: serviceSecretOf(secret),
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_LOG_LEVEL: 'silent',
        ENGRAM_INGESTION_URL: ingestionServer.url,
      }),
      { handleSignals: false },
    ));
    for (
      let i = 0;
      i < 300 && cell.status !== MemCellStatus.EXTRACTED && cell.status !== MemCellStatus.FAILED;
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      cell = await get();
    }
    expect(cell.status).toBe(MemCellStatus.EXTRACTED);
    expect(cell.extractionJob).toMatch(/^extractionJobs\//);

    const governance = createClient(
      GovernanceService,
      createGrpcTransport({ baseUrl: governanceServer.url }),
    );
    const { extractionJob } = await governance.getExtractionJob({ name: cell.extractionJob }, { headers });
    expect(extractionJob?.memCell).toBe(memCell!.name);
    const { memories } = await governance.listMemories({ types: [MemoryType.FACT] }, { headers });
    const fact = (namespace: string, key: string) =>
      memories.find((m) => m.namespace === namespace && m.key === key);
    expect(fact('user_preference', 'answer_style')?.value).toMatchObject({ style: 'concise' });
    const goal = fact('goal', 'current_goal');
    expect(goal).toBeDefined();
    expect(goal?.owner).toBe('alice');
    // The TTL hint ("the next 30 days") became expire_time, 30 days after the message.
    expect(Math.abs(timestampMs(goal!.expireTime!) - (said + 30 * DAY))).toBeLessThan(DAY);
  }, 90_000);
});
