/**
 * Randomized isolation test: several tenants, users and orgs with overlapping content, thousands of
 * searches by random principals, and id-based reads; every result is checked against a visibility
 * model computed here from what was created. Reproduce a failure with ENGRAM_ISOLATION_SEED=<seed>
 * (the seed is part of the describe block's name).
 */
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ItemKind, Scope } from '@engram/contracts/common';
import { DecisionOutcome, type GovernanceService, MemoryType } from '@engram/contracts/governance';
import { type IngestionService, MessageRole } from '@engram/contracts/ingestion';
import type { RetrievalService, SearchResponse } from '@engram/contracts/retrieval';
import type { Role } from '@engram/runtime';
import { choices, seededRandom } from '@engram/testing';
import { isolationSeed, newSecret, pool, sleep, startServer, TokenCache } from './harness.js';
import {
  callOptionsOf,
  describePrincipal,
  randomFilter,
  VOCABULARY,
  visible,
  type Principal,
  type SearchFilter,
} from './visibility.js';

const seed = isolationSeed();
/** Seeded (no Math.random), so a failure can be replayed from its seed. */
const random = seededRandom(seed);
const draws = choices(random);
const { chance, pick, subset, pickN } = draws;

const words = VOCABULARY.flat();
const sentence = (who: string) => {
  const [a, b, c] = pickN(VOCABULARY, 3).map((pair) => pick(pair));
  return chance(0.5)
    ? `${who} talked about ${a!} and ${b!}, then planned the ${c!} again`
    : `${who} 提到了${a!}和${b!}，之后又安排了${c!}`;
};

const TENANTS = ['tenant-a', 'tenant-b', 'tenant-c'];
/** The same subjects and org ids in every tenant: only the tenant tells them apart. */
const USERS = ['user-0', 'user-1', 'user-2', 'user-3'];
const ORGS = ['org-x', 'org-y'];

interface User {
  readonly tenant: string;
  readonly subject: string;
  readonly orgs: string[];
  readonly platform: boolean;
}

type ItemType = 'memory' | 'document' | 'chunk' | 'session' | 'message';
interface Item {
  readonly type: ItemType;
  readonly name: string;
  readonly tenant: string;
  readonly owner: string;
  readonly scope: Scope;
  readonly orgId: string;
  /** Search result kind, when the item is a search result (memories, chunks, user messages = rounds). */
  readonly kind?: ItemKind;
  readonly text?: string;
}

function matches(item: Item, filter: SearchFilter): boolean {
  if (filter.kinds !== undefined && !filter.kinds.includes(item.kind!)) return false;
  if (filter.scopes !== undefined && !filter.scopes.includes(item.scope)) return false;
  if (filter.orgIds !== undefined && item.scope === Scope.ORG && !filter.orgIds.includes(item.orgId))
    return false;
  return true;
}

const secret = newSecret();
const tokens = new TokenCache(secret);
const as = (p: Principal) => callOptionsOf(tokens, p);

let stop: () => Promise<void>;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let retrieval: Client<typeof RetrievalService>;

const users: User[] = [];
const items = new Map<string, Item>();
const searchable = () => [...items.values()].filter((i) => i.kind !== undefined);
const writer = (u: User): Principal => ({
  tenant: u.tenant,
  subject: u.subject,
  orgs: u.orgs,
  roles: u.platform ? ['platform'] : [],
});

/** A random principal: mostly a real user with all its orgs, sometimes narrowed, widened or a stranger. */
function randomPrincipal(options: { admin?: boolean } = {}): Principal {
  const roll = random();
  if (roll < 0.05) {
    // A stranger: another tenant with the same subject and org names, or an unknown subject.
    return chance(0.5)
      ? {
          tenant: 'tenant-z',
          subject: pick(USERS),
          orgs: subset(ORGS),
          roles: subset(['platform'] as Role[]),
        }
      : { tenant: pick(TENANTS), subject: 'user-ghost', orgs: subset(ORGS), roles: [] };
  }
  const u = pick(users);
  const roles: Role[] = [];
  if (u.platform && chance(0.85)) roles.push('platform');
  if (options.admin === true && chance(0.15)) roles.push('admin');
  const orgs = chance(0.8) ? u.orgs : subset(u.orgs);
  return { tenant: u.tenant, subject: u.subject, orgs, roles };
}

beforeAll(async () => {
  ({ stop, ingestion, governance, retrieval } = await startServer(secret));
}, 60_000);

afterAll(async () => {
  await stop();
});

describe(`Isolation across tenants, users and orgs (seed ${seed})`, () => {
  const stats = { searches: 0, nonEmpty: 0, resultsChecked: 0, idReads: 0, listCalls: 0, rejected: 0 };
  const violations: string[] = [];
  const found = new Set<string>();

  beforeAll(async () => {
    const started = Date.now();
    for (const tenant of TENANTS) {
      const platformUser = pick(USERS);
      const tenantUsers = USERS.map((subject) => ({
        tenant,
        subject,
        orgs: subset(ORGS, 0.6),
        platform: subject === platformUser,
      }));
      // Overlapping memberships: every org has at least two members.
      for (const org of ORGS) {
        while (tenantUsers.filter((u) => u.orgs.includes(org)).length < 2) {
          const u = pick(tenantUsers.filter((x) => !x.orgs.includes(org)));
          u.orgs.push(org);
        }
      }
      users.push(...tenantUsers);
    }

    const add = (item: Item) => items.set(item.name, item);
    await pool(users, 4, async (u) => {
      const me = writer(u);
      const who = `${u.subject}@${u.tenant}`;
      // Memories: a SELF fact, a SELF or ORG episode, an ORG episode when the user has orgs, and a
      // PLATFORM episode from the tenant's platform user.
      const candidates: { type: MemoryType; text: string; scope: Scope; orgId: string }[] = [
        { type: MemoryType.FACT, text: sentence(who), scope: Scope.SELF, orgId: '' },
        { type: MemoryType.EPISODE, text: sentence(who), scope: Scope.SELF, orgId: '' },
      ];
      if (u.orgs.length > 0) {
        candidates.push({
          type: MemoryType.EPISODE,
          text: sentence(who),
          scope: Scope.ORG,
          orgId: pick(u.orgs),
        });
        if (chance(0.5)) candidates[1] = { ...candidates[1]!, scope: Scope.ORG, orgId: pick(u.orgs) };
      }
      if (u.platform)
        candidates.push({ type: MemoryType.EPISODE, text: sentence(who), scope: Scope.PLATFORM, orgId: '' });
      const { decisions } = await governance.proposeMemories(
        {
          candidates: candidates.map((c, i) => ({
            type: c.type,
            confidence: 0.9,
            text: c.text,
            scopeHint: c.scope,
            orgId: c.orgId,
            ...(c.type === MemoryType.FACT
              ? { namespace: 'notes', key: `note_${i}`, value: { text: c.text } }
              : {}),
          })),
        },
        await as(me),
      );
      decisions.forEach((d, i) => {
        const c = candidates[i]!;
        if (d.outcome !== DecisionOutcome.ACCEPTED || d.memory === undefined)
          throw new Error(`seed ${seed}: ${who} memory ${c.text} not accepted: ${d.rule} ${d.reason}`);
        if (d.memory.scope !== c.scope || d.memory.orgId !== c.orgId || d.memory.owner !== u.subject)
          throw new Error(`seed ${seed}: memory stored with other scope/org/owner: ${d.memory.name}`);
        add({
          type: 'memory',
          name: d.memory.name,
          tenant: u.tenant,
          owner: u.subject,
          scope: c.scope,
          orgId: c.orgId,
          text: c.text,
          kind: ItemKind.MEMORY,
        });
      });

      // A small document, SELF or ORG.
      const orgDoc = u.orgs.length > 0 && chance(0.5);
      const docScope = orgDoc ? Scope.ORG : Scope.SELF;
      const docOrg = orgDoc ? pick(u.orgs) : '';
      const { document } = await ingestion.ingestDocument(
        {
          document: {
            mimeType: 'text/plain',
            displayName: `Notes of ${who}`,
            scope: docScope,
            orgId: docOrg,
          },
          content: new TextEncoder().encode(`${sentence(who)}\n\n${sentence(who)}`),
          waitForIndex: true,
        },
        await as(me),
      );
      const base = { tenant: u.tenant, owner: u.subject, scope: docScope, orgId: docOrg };
      add({ type: 'document', name: document!.name, ...base });
      const { chunks } = await ingestion.listChunks({ parent: document!.name, pageSize: 100 }, await as(me));
      for (const chunk of chunks) add({ type: 'chunk', name: chunk.name, ...base, kind: ItemKind.CHUNK });

      // A session with two rounds (always SELF).
      const { session } = await ingestion.createSession({ session: { timeZone: 'UTC' } }, await as(me));
      const self = { tenant: u.tenant, owner: u.subject, scope: Scope.SELF, orgId: '' };
      add({ type: 'session', name: session!.name, ...self });
      const at = Date.now() - 120_000;
      const { messages } = await ingestion.appendMessages(
        {
          parent: session!.name,
          messages: [0, 1, 2, 3].map((i) => ({
            role: i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
            content: sentence(who),
            occurTime: timestampFromMs(at + i * 1_000),
          })),
        },
        await as(me),
      );
      for (const m of messages)
        add({
          type: 'message',
          name: m.name,
          ...self,
          ...(m.role === MessageRole.USER ? { kind: ItemKind.ROUND } : {}),
        });
    });

    // Wait until every tenant's index has caught up (no outbox backlog, no drift).
    const deadline = Date.now() + 100_000;
    for (const tenant of TENANTS) {
      const admin = await as({ tenant, subject: 'root', orgs: [], roles: ['admin'] });
      const expected = {
        [ItemKind.MEMORY]: 0,
        [ItemKind.CHUNK]: 0,
        [ItemKind.ROUND]: 0,
      } as Record<ItemKind, number>;
      for (const i of searchable()) if (i.tenant === tenant) expected[i.kind!] += 1;
      for (;;) {
        const { indexStatus } = await retrieval.getIndexStatus({}, admin);
        const done =
          indexStatus !== undefined &&
          indexStatus.outboxPending === 0n &&
          indexStatus.outboxRetrying === 0n &&
          [ItemKind.MEMORY, ItemKind.CHUNK, ItemKind.ROUND].every((kind) => {
            const k = indexStatus.kinds.find((x) => x.kind === kind);
            return k !== undefined && k.indexedPoints === BigInt(expected[kind]) && k.drift === 0n;
          });
        if (done) break;
        if (Date.now() > deadline)
          throw new Error(
            `seed ${seed}: index of ${tenant} did not catch up: ${JSON.stringify(
              { expected, indexStatus },
              (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v),
            )}`,
          );
        await sleep(250);
      }
    }
    const counts = [...items.values()].reduce<Record<string, number>>(
      (acc, i) => ({ ...acc, [i.type]: (acc[i.type] ?? 0) + 1 }),
      {},
    );
    process.stdout.write(
      `isolation seed ${seed}: ${JSON.stringify(counts)} (${searchable().length} searchable), ` +
        `memberships ${users.map((u) => `${u.tenant}/${u.subject}:[${u.orgs.join(',')}]${u.platform ? '+platform' : ''}`).join(' ')}; ` +
        `created and indexed in ${Date.now() - started} ms\n`,
    );
  }, 150_000);

  it('never returns an item outside the caller’s visibility from thousands of random searches', async () => {
    const started = Date.now();
    const specs = Array.from({ length: 2_400 }, () => {
      const p = randomPrincipal({ admin: true });
      const filter = randomFilter(draws, p);
      const query = pickN(words, 1 + Math.floor(random() * 3)).join(' ');
      return { p, filter, query };
    });

    await pool(specs, 8, async ({ p, filter, query }) => {
      let response: SearchResponse;
      try {
        response = await retrieval.search({ query, topK: 25, filter }, await as(p));
      } catch (error) {
        throw new Error(
          `seed ${seed}: search ${JSON.stringify({ query, filter })} by ${describePrincipal(p)} failed: ${String(error)}`,
          { cause: error },
        );
      }
      stats.searches += 1;
      if (response.results.length > 0) stats.nonEmpty += 1;
      for (const r of response.results) {
        stats.resultsChecked += 1;
        const item = items.get(r.name);
        const where = `search ${JSON.stringify({ query, filter })} by ${describePrincipal(p)} returned ${r.name}`;
        if (item === undefined) {
          violations.push(`${where}: unknown item`);
          continue;
        }
        if (!visible(item, p)) {
          violations.push(
            `LEAK ${where} (${ItemKind[item.kind!]} of ${item.tenant}/${item.owner} ${Scope[item.scope]} ${item.orgId})`,
          );
          continue;
        }
        if (!matches(item, filter)) violations.push(`FILTER ${where} (${Scope[item.scope]} ${item.orgId})`);
        if (r.kind !== item.kind) violations.push(`KIND ${where}: ${r.kind} != ${item.kind}`);
        if (r.item.case === 'memory' && r.item.value.text !== item.text)
          violations.push(`CONTENT ${where}: ${r.item.value.text}`);
        found.add(r.name);
      }
    });

    const missed = searchable().filter((i) => !found.has(i.name));
    process.stdout.write(
      `isolation seed ${seed}: ${stats.searches} searches (${stats.nonEmpty} non-empty), ` +
        `${stats.resultsChecked} results checked, ${found.size}/${searchable().length} items found, ` +
        `${violations.length} violations, ${Date.now() - started} ms\n`,
    );
    expect({ seed, violations: violations.slice(0, 20), count: violations.length }).toEqual({
      seed,
      violations: [],
      count: 0,
    });
    expect(stats.searches).toBe(specs.length);
    expect(stats.nonEmpty / stats.searches).toBeGreaterThan(0.8);
    expect({ seed, missed: missed.map((i) => `${i.type} ${i.name}`) }).toEqual({ seed, missed: [] });
  }, 120_000);

  it('answers id-based reads and lists only within the caller’s visibility', async () => {
    const started = Date.now();
    const idViolations: string[] = [];
    let allowed = 0;
    let denied = 0;
    const read = async (item: Item, p: Principal): Promise<string> => {
      const options = await as(p);
      switch (item.type) {
        case 'memory':
          return (await governance.getMemory({ name: item.name }, options)).memory!.name;
        case 'document':
          return (await ingestion.getDocument({ name: item.name }, options)).document!.name;
        case 'chunk':
          return (await ingestion.getChunk({ name: item.name }, options)).chunk!.name;
        case 'session':
          return (await ingestion.getSession({ name: item.name }, options)).session!.name;
        case 'message':
          return (await ingestion.getMessage({ name: item.name }, options)).message!.name;
      }
    };
    // Every item, read by a few random principals (no admin: it may widen some reads by design)
    // and by one that must see it and one that must not, whenever such principals exist.
    const tasks: { item: Item; p: Principal }[] = [];
    const everyone: Principal[] = users.flatMap((u) => [
      writer(u),
      { ...writer(u), tenant: 'tenant-z' },
      { ...writer(u), orgs: [] },
    ]);
    for (const item of items.values()) {
      for (let i = 0; i < 4; i += 1) tasks.push({ item, p: randomPrincipal() });
      const yes = everyone.filter((p) => visible(item, p));
      const no = everyone.filter((p) => !visible(item, p));
      if (yes.length > 0) tasks.push({ item, p: pick(yes) });
      if (no.length > 0) tasks.push({ item, p: pick(no) });
    }
    await pool(tasks, 8, async ({ item, p }) => {
      stats.idReads += 1;
      const may = visible(item, p);
      const where = `${item.type} ${item.name} (${item.tenant}/${item.owner} ${Scope[item.scope]} ${item.orgId}) read by ${describePrincipal(p)}`;
      try {
        const name = await read(item, p);
        if (!may) idViolations.push(`LEAK ${where}`);
        else if (name !== item.name) idViolations.push(`WRONG ${where}: got ${name}`);
        else allowed += 1;
      } catch (error) {
        const code = error instanceof ConnectError ? error.code : undefined;
        if (may) idViolations.push(`DENIED ${where}: ${String(error)}`);
        else if (code !== Code.NotFound) idViolations.push(`CODE ${where}: ${String(error)}`);
        else denied += 1;
      }
    });

    // Lists: exactly the visible memories, documents and sessions.
    const listers = [...users.map(writer), ...Array.from({ length: 24 }, () => randomPrincipal())];
    await pool(listers, 8, async (p) => {
      const options = await as(p);
      const expectSet = (type: ItemType, names: string[]) => {
        stats.listCalls += 1;
        const want = [...items.values()].filter((i) => i.type === type && visible(i, p)).map((i) => i.name);
        const extra = names.filter((n) => !want.includes(n));
        const missing = want.filter((n) => !names.includes(n));
        for (const n of extra) {
          const i = items.get(n);
          idViolations.push(
            `LIST LEAK ${type} ${n} (${i === undefined ? 'unknown' : `${i.tenant}/${i.owner} ${Scope[i.scope]} ${i.orgId}`}) listed for ${describePrincipal(p)}`,
          );
        }
        if (missing.length > 0)
          idViolations.push(`LIST MISSING ${type} ${missing.join(',')} for ${describePrincipal(p)}`);
      };
      expectSet(
        'memory',
        (await governance.listMemories({ pageSize: 500 }, options)).memories.map((m) => m.name),
      );
      expectSet(
        'document',
        (await ingestion.listDocuments({ pageSize: 100 }, options)).documents.map((d) => d.name),
      );
      expectSet(
        'session',
        (await ingestion.listSessions({ pageSize: 100 }, options)).sessions.map((s) => s.name),
      );
    });

    process.stdout.write(
      `isolation seed ${seed}: ${stats.idReads} id reads (${allowed} allowed, ${denied} NOT_FOUND), ` +
        `${stats.listCalls} list checks, ${idViolations.length} violations, ${Date.now() - started} ms\n`,
    );
    expect({ seed, violations: idViolations.slice(0, 20), count: idViolations.length }).toEqual({
      seed,
      violations: [],
      count: 0,
    });
    expect(allowed).toBeGreaterThan(items.size);
    expect(denied).toBeGreaterThan(items.size);
  }, 60_000);
});
