import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Scope } from '@engram/contracts/common';
import {
  DecisionOutcome,
  ExtractionJobState,
  ExtractorRunState,
  type GovernanceService,
  MemoryStatus,
  MemoryType,
  SourceKind,
} from '@engram/contracts/governance';
import { type IngestionService, MemCellStatus, MessageRole } from '@engram/contracts/ingestion';
import { errorInfoOf, type Role } from '@engram/runtime';
import { callerOf, newSecret, startServer, tempDir } from './harness.js';

const secret = newSecret();
const dataDir = tempDir();
const DAY = 24 * 60 * 60 * 1000;
let stop: () => Promise<void>;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;

beforeAll(async () => {
  ({ stop, ingestion, governance } = await startServer(secret, { dataDir }));
}, 60_000);

afterAll(async () => {
  await stop();
});

const as = callerOf(secret);

/** One conversation turn by `subject`, flushed and extracted; returns the MemCell. */
async function say(subject: string, content: string, at: number, timeZone = 'UTC') {
  const options = await as(subject);
  const { session } = await ingestion.createSession({ session: { timeZone } }, options);
  await ingestion.appendMessages(
    {
      parent: session!.name,
      messages: [{ role: MessageRole.USER, content, occurTime: timestampFromMs(at) }],
    },
    options,
  );
  const { memCell } = await ingestion.flushSession(
    { name: session!.name, waitForExtraction: true, extractionWaitTimeout: { seconds: 30n } },
    options,
  );
  return memCell!;
}

async function facts(subject: string) {
  const { memories } = await governance.listMemories({ types: [MemoryType.FACT] }, await as(subject));
  return memories;
}

describe('extraction through governance (offline extractors, hard rules)', () => {
  it.each([
    [
      'English',
      'ada',
      'From now on please answer more concisely. My goal for the next 30 days is to solve 200 problems.',
    ],
    ['Chinese', 'li', '以后请你回答时更简洁一点。我最近 30 天目标是刷 200 道题。'],
  ])(
    'turns the blueprint example (%s) into a preference and a 30-day goal',
    async (_language, subject, text) => {
      const said = Date.now() - 60_000;
      const cell = await say(subject, text, said, 'Asia/Shanghai');
      expect(cell.status).toBe(MemCellStatus.EXTRACTED);
      const found = await facts(subject);
      const preference = found.find((m) => m.namespace === 'user_preference' && m.key === 'answer_style');
      expect(preference?.value).toMatchObject({ style: 'concise' });
      expect(preference?.sourceKind).toBe(SourceKind.EXPLICIT_USER_STATEMENT);
      expect(preference?.scope).toBe(Scope.SELF);
      const goal = found.find((m) => m.namespace === 'goal' && m.key === 'current_goal');
      expect(goal?.expireTime).toBeDefined();
      expect(Math.abs(timestampMs(goal!.expireTime!) - (said + 30 * DAY))).toBeLessThan(DAY);

      // The job explains every decision with the rules that fired.
      const { extractionJob } = await governance.getExtractionJob(
        { name: cell.extractionJob },
        await as(subject),
      );
      expect(extractionJob?.state).toBe(ExtractionJobState.SUCCEEDED);
      const accepted = extractionJob!.decisions.filter((d) => d.outcome === DecisionOutcome.ACCEPTED);
      expect(accepted.length).toBeGreaterThanOrEqual(2);
      expect(accepted[0]!.evaluations.map((e) => e.rule)).toContain('scope_authorization');

      // Saying it again changes nothing: duplicates are a no-op.
      await say(subject, text, said + 1_000, 'Asia/Shanghai');
      const again = await facts(subject);
      expect(again.filter((m) => m.namespace === 'user_preference' && m.key === 'answer_style')).toHaveLength(
        1,
      );
    },
    60_000,
  );

  it('leaves no trace of secrets in the database or the index', async () => {
    const key = `sk-proj-${randomBytes(24).toString('hex')}`;
    const password = `Tr0ub4dor&${randomBytes(4).toString('hex')}`;
    const idNumber = '11010519491231002X';
    await say(
      'mallory',
      `My OpenAI API key is ${key}. My password is ${password}. My ID number is ${idNumber}. I like green tea.`,
      Date.now() - 60_000,
    );
    // Rules refuse secrets in directly proposed memories too.
    const { decisions } = await governance.proposeMemories(
      {
        candidates: [
          {
            type: MemoryType.FACT,
            namespace: 'profile',
            key: 'api_key',
            value: { key },
            text: `my api key is ${key}`,
            confidence: 0.99,
          },
        ],
      },
      await as('mallory'),
    );
    expect(decisions[0]?.outcome).toBe(DecisionOutcome.REJECTED);
    expect(decisions[0]?.rule).toBe('secret_denial');
    // Give the indexer a moment to write whatever it was going to write.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(dataDir);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = readFileSync(file);
      for (const needle of [key, password, idNumber]) expect(bytes.includes(Buffer.from(needle))).toBe(false);
    }
  }, 60_000);

  it('refuses scopes the caller cannot grant', async () => {
    const propose = async (scopeHint: Scope, orgId: string, options: { orgIds?: string[]; roles?: Role[] }) =>
      governance.proposeMemories(
        {
          candidates: [
            {
              type: MemoryType.FACT,
              namespace: 'team',
              key: 'standup_time',
              value: { time: '09:30' },
              text: 'The team stand-up is at 09:30',
              confidence: 0.9,
              scopeHint,
              orgId,
            },
          ],
        },
        await as('carol', options),
      );
    const outsider = await propose(Scope.ORG, 'org-1', { orgIds: ['org-2'] });
    expect(outsider.decisions[0]).toMatchObject({
      outcome: DecisionOutcome.REJECTED,
      rule: 'scope_authorization',
    });
    const noRole = await propose(Scope.PLATFORM, '', {});
    expect(noRole.decisions[0]).toMatchObject({
      outcome: DecisionOutcome.REJECTED,
      rule: 'scope_authorization',
    });
    const member = await propose(Scope.ORG, 'org-1', { orgIds: ['org-1'] });
    expect(member.decisions[0]?.outcome).toBe(DecisionOutcome.ACCEPTED);
    expect(member.decisions[0]?.memory?.scope).toBe(Scope.ORG);
    // Another member of the org sees it; an outsider does not.
    const name = member.decisions[0]!.memory!.name;
    await expect(
      governance.getMemory({ name }, await as('dave', { orgIds: ['org-1'] })),
    ).resolves.toBeDefined();
    const hidden = await governance.getMemory({ name }, await as('erin')).catch((e: unknown) => e);
    expect(errorInfoOf(ConnectError.from(hidden))?.reason).toBe('RESOURCE_NOT_FOUND');
  });

  it('lists memories by key, source, confidence, time and validity, and treats a passed expiry as EXPIRED', async () => {
    const options = await as('lena');
    const now = Date.now();
    const fact = (key: string, extra: object) => ({
      type: MemoryType.FACT,
      namespace: 'user_preference',
      key,
      value: { key },
      text: `likes ${key}`,
      confidence: 0.9,
      ...extra,
    });
    const { decisions } = await governance.proposeMemories(
      {
        candidates: [
          fact('tea', { occurTime: timestampFromMs(now - 10 * DAY) }),
          fact('coffee', {
            confidence: 0.7,
            sourceKind: SourceKind.INFERRED,
            occurTime: timestampFromMs(now - DAY),
          }),
          fact('juice', {
            validFromTime: timestampFromMs(now + DAY),
            validUntilTime: timestampFromMs(now + 2 * DAY),
          }),
          fact('soda', { expireTime: timestampFromMs(now + 1_500) }),
        ],
      },
      options,
    );
    expect(decisions.map((d) => d.outcome)).toEqual(Array(4).fill(DecisionOutcome.ACCEPTED));
    const keys = async (request: object) =>
      (await governance.listMemories({ namespaces: ['user_preference'], ...request }, options)).memories
        .map((m) => m.key)
        .sort();
    expect(await keys({ keys: ['tea', 'coffee'] })).toEqual(['coffee', 'tea']);
    expect(await keys({ minConfidence: 0.8 })).toEqual(['juice', 'soda', 'tea']);
    expect(await keys({ sourceKinds: [SourceKind.INFERRED] })).toEqual(['coffee']);
    expect(
      await keys({ occurTime: { startTime: timestampFromMs(now - 2 * DAY), endTime: timestampFromMs(now) } }),
    ).toEqual(['coffee']);
    expect(await keys({ validAt: timestampFromMs(now) })).toEqual(['coffee', 'soda', 'tea']);
    expect(await keys({ validAt: timestampFromMs(now + DAY + 1) })).toContain('juice');
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    // Past its expiry, before the sweeper ran: listed as EXPIRED, not as ACTIVE.
    expect(await keys({})).not.toContain('soda');
    expect(await keys({ statuses: [MemoryStatus.EXPIRED] })).toEqual(['soda']);
  });

  it('refuses an extraction of a MemCell the caller does not own', async () => {
    const cell = await say('frank', 'I live in Lisbon.', Date.now() - 60_000);
    const refused = await governance
      .extractMemories({ memCell: cell.name }, await as('grace'))
      .catch((e: unknown) => e);
    expect(errorInfoOf(ConnectError.from(refused))?.reason).toBe('RESOURCE_NOT_FOUND');
    // The owner may re-extract; what was already extracted is skipped unless asked for.
    const { extractionJob } = await governance.extractMemories(
      { memCell: cell.name, requestId: 'again-1' },
      await as('frank'),
    );
    expect(extractionJob?.state).toBe(ExtractionJobState.SUCCEEDED);
    expect(extractionJob?.extractorRuns.every((r) => r.state === ExtractorRunState.SKIPPED)).toBe(true);
  });
});
