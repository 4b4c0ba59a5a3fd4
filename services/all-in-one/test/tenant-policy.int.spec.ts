import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ContextService } from '@engram/contracts/context';
import { DecisionOutcome, type GovernanceService, MemoryType } from '@engram/contracts/governance';
import { type IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { ConfigError } from '@engram/runtime';
import { authorized, newSecret, startServer, tempDir } from './harness.js';

const secret = newSecret();
const dataDir = tempDir();
const policyFile = join(dataDir, 'tenants.json');
let stop: () => Promise<void>;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let context: Client<typeof ContextService>;

beforeAll(async () => {
  writeFileSync(
    policyFile,
    JSON.stringify({ tenants: { lab: { redactSecrets: false, governance: { confidenceThreshold: 0.95 } } } }),
  );
  ({ stop, ingestion, governance, context } = await startServer(secret, {
    dataDir,
    env: { ENGRAM_TENANT_POLICY_FILE: policyFile },
  }));
}, 60_000);

afterAll(async () => {
  await stop();
});

const as = (tenantId: string) => authorized(secret, { subject: 'alice', tenantId });

describe('per-tenant settings (ENGRAM_TENANT_POLICY_FILE)', () => {
  it('turns secret redaction off only for the tenant that asks', async () => {
    const key = `sk-proj-${randomBytes(24).toString('hex')}`;
    const stored = async (tenantId: string) => {
      const options = await as(tenantId);
      const { session } = await ingestion.createSession({}, options);
      const { messages } = await ingestion.appendMessages(
        { parent: session!.name, messages: [{ role: MessageRole.USER, content: `the key is ${key}` }] },
        options,
      );
      return messages[0]!.content;
    };
    expect(await stored('lab')).toContain(key);
    expect(await stored('acme')).toContain('[redacted:api_key]');
  });

  it('applies the same setting to session names and to the session state context stores', async () => {
    const key = `sk-proj-${randomBytes(24).toString('hex')}`;
    const stored = async (tenantId: string) => {
      const options = await as(tenantId);
      const { session } = await ingestion.createSession(
        { session: { displayName: `the key is ${key}` } },
        options,
      );
      const { sessionState } = await context.updateSessionState(
        {
          sessionState: { name: `${session!.name}/state`, summary: `the key is ${key}` },
          updateMask: { paths: ['summary'] },
        },
        options,
      );
      return [session!.displayName, sessionState!.summary];
    };
    expect(await stored('lab')).toEqual([`the key is ${key}`, `the key is ${key}`]);
    expect(await stored('acme')).toEqual(['the key is [redacted:api_key]', 'the key is [redacted:api_key]']);
  });

  it("applies the tenant's confidence threshold to the hard rules", async () => {
    const propose = async (tenantId: string) =>
      governance.proposeMemories(
        {
          candidates: [
            {
              type: MemoryType.FACT,
              namespace: 'user_preference',
              key: 'drink',
              value: { drink: 'tea' },
              text: 'Prefers tea',
              confidence: 0.9,
            },
          ],
        },
        await as(tenantId),
      );
    expect((await propose('lab')).decisions[0]).toMatchObject({
      outcome: DecisionOutcome.REJECTED,
      rule: 'confidence_threshold',
    });
    expect((await propose('acme')).decisions[0]?.outcome).toBe(DecisionOutcome.ACCEPTED);
  });

  it('refuses to start with an invalid override, naming the tenant and the setting', async () => {
    const bad = join(dataDir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ tenants: { lab: { governance: { confidenceThreshold: 7 } } } }));
    const started = startServer(secret, { env: { ENGRAM_TENANT_POLICY_FILE: bad } });
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toThrow(/tenants\.lab\.governance/);
  });
});
