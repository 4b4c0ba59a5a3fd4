/**
 * Isolation at scale (issue 11): more tenants, users and orgs than isolation.int.spec.ts, with
 * overlapping content (the same subjects, org ids and vocabulary in every tenant), and every read
 * path checked against a visibility model computed here: GetMemory, ListMemories,
 * ListMemoryRevisions / GetMemoryRevision, Search, BuildContext (every traced candidate and the
 * rendered text), GetDocument / ListDocuments / GetChunk / ListChunks, GetSession / ListSessions,
 * GetMessage / ListMessages, GetMemCell / ListMemCells, GetSessionState.
 *
 * Model: SELF = the owner; ORG = a member of the org (from the credential); PLATFORM = only with
 * the `platform` role; never another tenant; sessions and their messages, MemCells and state are
 * owner-only. Callers never hold `admin` or `service` here (both widen reads by design).
 * Memories written by the background extraction of flushed MemCells are added to the model from
 * the source of truth (the SQLite file), not from the API under test.
 *
 * Reproduce a failure with ENGRAM_ISOLATION_SEED=<seed> (the seed is in the describe block's name).
 */
import { join } from 'node:path';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ItemKind, Scope } from '@engram/contracts/common';
import type { ContextService } from '@engram/contracts/context';
import { DecisionOutcome, type GovernanceService, MemoryType } from '@engram/contracts/governance';
import { type IngestionService, MessageRole } from '@engram/contracts/ingestion';
import type { RetrievalService } from '@engram/contracts/retrieval';
import type { Role } from '@engram/runtime';
import { openStore, type Store } from '@engram/store';
import { choices, seededRandom } from '@engram/testing';
import { isolationSeed, newSecret, pool, sleep, startServer, TokenCache } from './harness.js';
import {
  callOptionsOf,
  describePrincipal,
  randomFilter,
  VOCABULARY,
  visible,
  type Principal,
} from './visibility.js';

const seed = isolationSeed();
/** Seeded (no Math.random), so a failure can be replayed from its seed. */
const random = seededRandom(seed);
const draws = choices(random);
const { chance, pick, subset, pickN } = draws;

const words = VOCABULARY.flat();

const TENANTS = ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d'];
const USERS = ['user-0', 'user-1', 'user-2', 'user-3', 'user-4', 'user-5'];
const ORGS = ['org-x', 'org-y', 'org-z'];

/** A marker unique to one item, so rendered text (BuildContext) can be traced to its source. */
let markers = 0;
const marker = () => `zq${(markers += 1)}k${Math.floor(random() * 1e6).toString(36)}`;
const sentence = (mark: string) => {
  const [a, b, c] = pickN(VOCABULARY, 3).map((pair) => pick(pair));
  return chance(0.5)
    ? `${mark} talked about ${a!} and ${b!}, then planned the ${c!} again`
    : `${mark} 提到了${a!}和${b!}，之后又安排了${c!}`;
};

interface User extends Principal {
  readonly platform: boolean;
}

type ItemType = 'memory' | 'revision' | 'document' | 'chunk' | 'session' | 'message' | 'memCell' | 'state';
interface Item {
  readonly type: ItemType;
  readonly name: string;
  readonly tenant: string;
  readonly owner: string;
  readonly scope: Scope;
  readonly orgId: string;
  /** For memories: the stored status (ListMemories lists ACTIVE ones by default). */
  readonly active?: boolean;
  readonly kind?: ItemKind;
  /** The parent (revisions: the memory; chunks: the document; messages, MemCells, state: the session). */
  readonly parent?: string;
  readonly marker?: string;
}

const secret = newSecret();
const tokens = new TokenCache(secret);
const as = async (p: Principal) => ({ ...(await callOptionsOf(tokens, p)), timeoutMs: 30_000 });
const who = describePrincipal;

let stop: () => Promise<void>;
let store: Store;
let ingestion: Client<typeof IngestionService>;
let governance: Client<typeof GovernanceService>;
let retrieval: Client<typeof RetrievalService>;
let context: Client<typeof ContextService>;

const users: User[] = [];
const items = new Map<string, Item>();
const byType = (type: ItemType) => [...items.values()].filter((i) => i.type === type);
const add = (item: Item) => items.set(item.name, item);
const writer = (u: User): Principal => ({ ...u, roles: u.platform ? ['platform'] : [] });
const owns = (item: Item, p: Principal) => item.tenant === p.tenant && item.owner === p.subject;

/** A random principal: mostly a real user with all its orgs, sometimes narrowed, widened or a stranger. */
function randomPrincipal(): Principal {
  const roll = random();
  if (roll < 0.06)
    return {
      tenant: 'tenant-z',
      subject: pick(USERS),
      orgs: subset(ORGS),
      roles: subset(['platform'] as Role[]),
    };
  if (roll < 0.1)
    return {
      tenant: pick(TENANTS),
      subject: 'user-ghost',
      orgs: subset(ORGS),
      roles: subset(['platform'] as Role[]),
    };
  const u = pick(users);
  const roles: Role[] = [];
  if (u.platform ? chance(0.85) : chance(0.05)) roles.push('platform');
  const r = random();
  const orgs = r < 0.7 ? u.orgs : r < 0.9 ? subset(u.orgs) : [...new Set([...u.orgs, pick(ORGS)])];
  return { tenant: u.tenant, subject: u.subject, orgs, roles };
}

beforeAll(async () => {
  let dataDir: string;
  ({ stop, dataDir, ingestion, governance, retrieval, context } = await startServer(secret));
  store = openStore({ target: join(dataDir, 'engram.db') });
}, 60_000);

afterAll(async () => {
  await store.close();
  await stop();
});

const SCOPE_OF: Record<string, Scope> = { SELF: Scope.SELF, ORG: Scope.ORG, PLATFORM: Scope.PLATFORM };

describe(`Isolation at scale (seed ${seed})`, () => {
  const counts: Record<string, number> = {};
  const count = (what: string, n = 1) => (counts[what] = (counts[what] ?? 0) + n);
  const violations: string[] = [];

  beforeAll(async () => {
    const started = Date.now();
    for (const tenant of TENANTS) {
      const platformUsers = pickN(USERS, 2);
      const tenantUsers: User[] = USERS.map((subject) => ({
        tenant,
        subject,
        orgs: subset(ORGS, 0.5),
        roles: [],
        platform: platformUsers.includes(subject),
      }));
      for (const org of ORGS)
        while (tenantUsers.filter((u) => u.orgs.includes(org)).length < 2) {
          const u = pick(tenantUsers.filter((x) => !x.orgs.includes(org)));
          (u.orgs as string[]).push(org);
        }
      users.push(...tenantUsers);
    }

    await pool(users, 4, async (u) => {
      const me = writer(u);
      const options = await as(me);
      const base = { tenant: u.tenant, owner: u.subject };
      const candidates: { type: MemoryType; scope: Scope; orgId: string; marker: string }[] = [
        { type: MemoryType.FACT, scope: Scope.SELF, orgId: '', marker: marker() },
        { type: MemoryType.EPISODE, scope: Scope.SELF, orgId: '', marker: marker() },
      ];
      for (const org of u.orgs)
        candidates.push({ type: MemoryType.EPISODE, scope: Scope.ORG, orgId: org, marker: marker() });
      if (u.platform)
        candidates.push({ type: MemoryType.EPISODE, scope: Scope.PLATFORM, orgId: '', marker: marker() });
      const { decisions } = await governance.proposeMemories(
        {
          candidates: candidates.map((c, i) => {
            const text = sentence(c.marker);
            return {
              type: c.type,
              confidence: 0.9,
              text,
              scopeHint: c.scope,
              orgId: c.orgId,
              ...(c.type === MemoryType.FACT
                ? { namespace: 'notes', key: `note_${i}`, value: { text } }
                : {}),
            };
          }),
        },
        options,
      );
      const memories: string[] = [];
      decisions.forEach((d, i) => {
        const c = candidates[i]!;
        if (d.outcome !== DecisionOutcome.ACCEPTED || d.memory === undefined)
          throw new Error(`seed ${seed}: memory of ${who(me)} not accepted: ${d.rule} ${d.reason}`);
        memories.push(d.memory.name);
        add({
          type: 'memory',
          name: d.memory.name,
          ...base,
          scope: c.scope,
          orgId: c.orgId,
          active: true,
          kind: ItemKind.MEMORY,
          marker: c.marker,
        });
      });
      // A second revision for one memory.
      const episode = memories[1]!;
      const m2 = items.get(episode)!;
      await governance.updateMemory(
        { memory: { name: episode, text: sentence(m2.marker!) }, updateMask: { paths: ['text'] } },
        options,
      );

      // A document: SELF, ORG or (for platform users) PLATFORM.
      const docScope =
        u.platform && chance(0.3)
          ? Scope.PLATFORM
          : u.orgs.length > 0 && chance(0.5)
            ? Scope.ORG
            : Scope.SELF;
      const docOrg = docScope === Scope.ORG ? pick(u.orgs) : '';
      const docMarker = marker();
      const { document } = await ingestion.ingestDocument(
        {
          document: {
            mimeType: 'text/plain',
            displayName: `Notes ${docMarker}`,
            scope: docScope,
            orgId: docOrg,
          },
          content: new TextEncoder().encode(`${sentence(docMarker)}\n\n${sentence(docMarker)}`),
          waitForIndex: true,
        },
        options,
      );
      const docBase = { ...base, scope: docScope, orgId: docOrg };
      add({ type: 'document', name: document!.name, ...docBase, marker: docMarker });
      const { chunks } = await ingestion.listChunks({ parent: document!.name, pageSize: 100 }, options);
      for (const chunk of chunks)
        add({
          type: 'chunk',
          name: chunk.name,
          ...docBase,
          kind: ItemKind.CHUNK,
          parent: document!.name,
          marker: docMarker,
        });

      // A session with two rounds, flushed into a MemCell, with a state (all owner-only).
      const self = { ...base, scope: Scope.SELF, orgId: '' };
      const sessionMarker = marker();
      const { session } = await ingestion.createSession({ session: { timeZone: 'UTC' } }, options);
      add({ type: 'session', name: session!.name, ...self, marker: sessionMarker });
      const at = Date.now() - 120_000;
      const { messages } = await ingestion.appendMessages(
        {
          parent: session!.name,
          messages: [0, 1, 2, 3].map((i) => ({
            role: i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
            content: sentence(sessionMarker),
            occurTime: timestampFromMs(at + i * 1_000),
          })),
        },
        options,
      );
      for (const m of messages)
        add({
          type: 'message',
          name: m.name,
          ...self,
          parent: session!.name,
          marker: sessionMarker,
          ...(m.role === MessageRole.USER ? { kind: ItemKind.ROUND } : {}),
        });
      const { memCell } = await ingestion.flushSession(
        { name: session!.name, waitForExtraction: true, extractionWaitTimeout: { seconds: 30n } },
        options,
      );
      if (memCell !== undefined) add({ type: 'memCell', name: memCell.name, ...self, parent: session!.name });
      const stateMarker = marker();
      await context.updateSessionState(
        {
          sessionState: {
            name: `${session!.name}/state`,
            summary: `summary ${stateMarker}`,
            keyPoints: [{ text: `point ${stateMarker}` }],
          },
          updateMask: { paths: ['summary', 'key_points'] },
        },
        options,
      );
      add({
        type: 'state',
        name: `${session!.name}/state`,
        ...self,
        parent: session!.name,
        marker: stateMarker,
      });
    });

    // Memories written by extraction (and any other memory): from the source of truth.
    const rows = await store.db
      .selectFrom('memories')
      .select(['id', 'tenant_id', 'owner_id', 'scope', 'org_id', 'status'])
      .execute();
    for (const r of rows) {
      const name = `memories/${r.id}`;
      const known = items.get(name);
      const active = r.status === 'ACTIVE';
      if (known === undefined)
        add({
          type: 'memory',
          name,
          tenant: r.tenant_id,
          owner: r.owner_id,
          scope: SCOPE_OF[r.scope]!,
          orgId: r.org_id,
          active,
          kind: ItemKind.MEMORY,
        });
      else items.set(name, { ...known, active });
    }
    // Revisions, read by each memory's owner (who can always see it).
    await pool(byType('memory'), 8, async (m) => {
      const { revisions } = await governance.listMemoryRevisions(
        { parent: m.name, pageSize: 100 },
        await as({
          tenant: m.tenant,
          subject: m.owner,
          orgs: m.orgId === '' ? [] : [m.orgId],
          roles: m.scope === Scope.PLATFORM ? ['platform'] : [],
        }),
      );
      for (const r of revisions)
        add({
          type: 'revision',
          name: r.name,
          tenant: m.tenant,
          owner: m.owner,
          scope: m.scope,
          orgId: m.orgId,
          parent: m.name,
        });
    });

    // Wait until every tenant's index has caught up.
    const deadline = Date.now() + 120_000;
    for (const tenant of TENANTS) {
      const admin = await as({ tenant, subject: 'root', orgs: [], roles: ['admin'] });
      for (;;) {
        const { indexStatus } = await retrieval.getIndexStatus({}, admin);
        if (
          indexStatus !== undefined &&
          indexStatus.outboxPending === 0n &&
          indexStatus.outboxRetrying === 0n &&
          indexStatus.kinds.every((k) => k.drift === 0n)
        )
          break;
        if (Date.now() > deadline) throw new Error(`seed ${seed}: the index of ${tenant} did not catch up`);
        await sleep(250);
      }
    }
    const byTypeCounts = [...items.values()].reduce<Record<string, number>>(
      (acc, i) => ({ ...acc, [i.type]: (acc[i.type] ?? 0) + 1 }),
      {},
    );
    process.stdout.write(
      `isolation-scale seed ${seed}: ${TENANTS.length} tenants, ${users.length} users, ${ORGS.length} orgs; ` +
        `${JSON.stringify(byTypeCounts)}; created and indexed in ${Date.now() - started} ms\n`,
    );
  }, 240_000);

  afterAll(() => {
    process.stdout.write(
      `isolation-scale seed ${seed}: checks ${JSON.stringify(counts)}, ${violations.length} violations\n`,
    );
  });

  const report = () => {
    expect({ seed, violations: violations.slice(0, 25), count: violations.length }).toEqual({
      seed,
      violations: [],
      count: 0,
    });
  };

  /** Reads that must succeed exactly when `may`, and fail NOT_FOUND otherwise. */
  async function expectRead(what: string, may: boolean, read: () => Promise<void>) {
    count(`${what.split(' ')[0]} ${may ? 'allowed' : 'denied'}`);
    try {
      await read();
      if (!may) violations.push(`LEAK ${what}`);
    } catch (error) {
      const code = error instanceof ConnectError ? error.code : undefined;
      if (may) violations.push(`DENIED ${what}: ${String(error)}`);
      else if (code !== Code.NotFound) violations.push(`CODE ${what}: ${String(error)}`);
    }
  }

  /** A listed set against the model. */
  function expectSet(what: string, p: Principal, names: string[], want: string[]) {
    count(what);
    count('listed names checked', names.length);
    for (const n of names)
      if (!want.includes(n)) {
        const i = items.get(n);
        violations.push(
          `LIST LEAK ${what} ${n} (${i === undefined ? 'unknown' : `${i.tenant}/${i.owner} ${Scope[i.scope]} ${i.orgId}`}) for ${who(p)}`,
        );
      }
    const missing = want.filter((n) => !names.includes(n));
    if (missing.length > 0) violations.push(`LIST MISSING ${what} ${missing.join(',')} for ${who(p)}`);
  }

  it('answers id reads of every kind only within the caller’s visibility', async () => {
    const everyone: Principal[] = users.flatMap((u) => [
      writer(u),
      { ...writer(u), tenant: 'tenant-z' },
      { ...writer(u), orgs: [] },
      { ...writer(u), roles: ['platform'] },
    ]);
    const mayRead = (item: Item, p: Principal) =>
      ['session', 'message', 'memCell', 'state'].includes(item.type) ? owns(item, p) : visible(item, p);
    const tasks: { item: Item; p: Principal }[] = [];
    for (const item of items.values()) {
      for (let i = 0; i < 2; i += 1) tasks.push({ item, p: randomPrincipal() });
      const yes = everyone.filter((p) => mayRead(item, p));
      const no = everyone.filter((p) => !mayRead(item, p));
      if (yes.length > 0) tasks.push({ item, p: pick(yes) });
      if (no.length > 0) tasks.push({ item, p: pick(no) });
    }
    await pool(tasks, 8, async ({ item, p }) => {
      const options = await as(p);
      const where = `${item.type} ${item.name} (${item.tenant}/${item.owner} ${Scope[item.scope]} ${item.orgId}) read by ${who(p)}`;
      const same = (name: string | undefined) => {
        if (name !== item.name) violations.push(`WRONG ${where}: got ${name}`);
      };
      await expectRead(where, mayRead(item, p), async () => {
        switch (item.type) {
          case 'memory':
            same((await governance.getMemory({ name: item.name }, options)).memory?.name);
            break;
          case 'revision':
            same((await governance.getMemoryRevision({ name: item.name }, options)).revision?.name);
            break;
          case 'document':
            same((await ingestion.getDocument({ name: item.name }, options)).document?.name);
            break;
          case 'chunk':
            same((await ingestion.getChunk({ name: item.name }, options)).chunk?.name);
            break;
          case 'session':
            same((await ingestion.getSession({ name: item.name }, options)).session?.name);
            break;
          case 'message':
            same((await ingestion.getMessage({ name: item.name }, options)).message?.name);
            break;
          case 'memCell':
            same((await ingestion.getMemCell({ name: item.name }, options)).memCell?.name);
            break;
          case 'state': {
            const { sessionState } = await context.getSessionState({ name: item.name }, options);
            same(sessionState?.name);
            if (sessionState !== undefined && !sessionState.summary.includes(item.marker!))
              violations.push(`CONTENT ${where}: ${sessionState.summary}`);
            break;
          }
        }
      });
    });
    report();
    expect(counts['memory allowed']).toBeGreaterThan(0);
    expect(counts['state denied']).toBeGreaterThan(0);
  }, 120_000);

  it('lists only what the caller may see: memories, revisions, documents, chunks, sessions, messages, MemCells', async () => {
    const listers = [...users.map(writer), ...Array.from({ length: 40 }, () => randomPrincipal())];
    await pool(listers, 6, async (p) => {
      const options = await as(p);
      const want = (type: ItemType, extra: (i: Item) => boolean = () => true) =>
        byType(type)
          .filter((i) => visible(i, p) && extra(i))
          .map((i) => i.name);
      expectSet(
        'ListMemories',
        p,
        (await governance.listMemories({ pageSize: 1_000 }, options)).memories.map((m) => m.name),
        want('memory', (i) => i.active === true),
      );
      expectSet(
        'ListDocuments',
        p,
        (await ingestion.listDocuments({ pageSize: 1_000 }, options)).documents.map((d) => d.name),
        want('document'),
      );
      expectSet(
        'ListSessions',
        p,
        (await ingestion.listSessions({ pageSize: 1_000 }, options)).sessions.map((s) => s.name),
        byType('session')
          .filter((s) => owns(s, p))
          .map((s) => s.name),
      );
      // Children lists of a few parents each: visible parent → exactly its children; else NOT_FOUND.
      const children = async (
        what: string,
        parents: Item[],
        childType: ItemType,
        may: (parent: Item) => boolean,
        list: (parent: string) => Promise<string[]>,
      ) => {
        for (const parent of parents) {
          const where = `${what} ${parent.name} (${parent.tenant}/${parent.owner} ${Scope[parent.scope]} ${parent.orgId}) by ${who(p)}`;
          const allowed = may(parent);
          await expectRead(where, allowed, async () => {
            const names = await list(parent.name);
            expectSet(
              what,
              p,
              names,
              byType(childType)
                .filter((c) => c.parent === parent.name)
                .map((c) => c.name),
            );
          });
        }
      };
      const sample = <T>(xs: T[], n: number) => pickN(xs, n);
      const own = (type: ItemType) => byType(type).filter((i) => owns(i, p));
      await children(
        'ListMemoryRevisions',
        [
          ...sample(byType('memory'), 4),
          ...sample(
            byType('memory').filter((m) => visible(m, p)),
            2,
          ),
        ],
        'revision',
        (m) => visible(m, p),
        async (parent) =>
          (await governance.listMemoryRevisions({ parent, pageSize: 100 }, options)).revisions.map(
            (r) => r.name,
          ),
      );
      await children(
        'ListChunks',
        [
          ...sample(byType('document'), 3),
          ...sample(
            byType('document').filter((d) => visible(d, p)),
            2,
          ),
        ],
        'chunk',
        (d) => visible(d, p),
        async (parent) =>
          (await ingestion.listChunks({ parent, pageSize: 100 }, options)).chunks.map((c) => c.name),
      );
      const sessions = [...sample(byType('session'), 3), ...own('session')];
      await children(
        'ListMessages',
        sessions,
        'message',
        (s) => owns(s, p),
        async (parent) =>
          (await ingestion.listMessages({ parent, pageSize: 100 }, options)).messages.map((m) => m.name),
      );
      await children(
        'ListMemCells',
        sessions,
        'memCell',
        (s) => owns(s, p),
        async (parent) =>
          (await ingestion.listMemCells({ parent, pageSize: 100 }, options)).memCells.map((m) => m.name),
      );
    });
    report();
    expect(counts['ListMemories']).toBe(listers.length);
  }, 120_000);

  it('never returns an item outside the caller’s visibility from random searches', async () => {
    const searchable = [...items.values()].filter((i) => i.kind !== undefined);
    const found = new Set<string>();
    let nonEmpty = 0;
    const specs = Array.from({ length: 500 }, () => {
      const p = randomPrincipal();
      const filter = randomFilter(draws, p);
      return { p, filter, query: pickN(words, 1 + Math.floor(random() * 3)).join(' ') };
    });
    await pool(specs, 8, async ({ p, filter, query }) => {
      const { results } = await retrieval.search({ query, topK: 25, filter }, await as(p));
      count('Search');
      if (results.length > 0) nonEmpty += 1;
      for (const r of results) {
        count('search results checked');
        const item = items.get(r.name);
        const where = `search ${JSON.stringify({ query, filter })} by ${who(p)} returned ${r.name}`;
        if (item === undefined) violations.push(`UNKNOWN ${where}`);
        else if (!visible(item, p))
          violations.push(`LEAK ${where} (${item.tenant}/${item.owner} ${Scope[item.scope]} ${item.orgId})`);
        else if (item.type === 'message' && !owns(item, p))
          violations.push(`LEAK ${where} (round of another user)`);
        else found.add(r.name);
      }
    });
    process.stdout.write(
      `isolation-scale seed ${seed}: ${found.size}/${searchable.length} searchable items found, ${nonEmpty} non-empty searches\n`,
    );
    report();
    expect(nonEmpty / specs.length).toBeGreaterThan(0.8);
  }, 240_000);

  it('assembles contexts (BuildContext, GetSessionState) only from what the caller may see', async () => {
    const tasks: { session: Item; p: Principal }[] = [];
    for (const session of byType('session')) {
      const owner = users.find((u) => u.tenant === session.tenant && u.subject === session.owner)!;
      // The owner, with its orgs and roles or narrowed; and one stranger.
      tasks.push({ session, p: writer(owner) });
      tasks.push({
        session,
        p: { ...writer(owner), orgs: subset(owner.orgs), roles: chance(0.3) ? ['platform'] : [] },
      });
      tasks.push({ session, p: randomPrincipal() });
    }
    const markerOwners = [...items.values()].filter((i) => i.marker !== undefined);
    await pool(tasks, 4, async ({ session, p }) => {
      const options = await as(p);
      const may = owns(session, p);
      const where = `BuildContext ${session.name} (${session.tenant}/${session.owner}) by ${who(p)}`;
      await expectRead(where, may, async () => {
        const query = pickN(words, 2).join(' ');
        const response = await context.buildContext(
          {
            session: session.name,
            userMessage: `what about ${query}?`,
            budget: { totalTokens: 6_000 },
            includeTrace: true,
            knowledge: { topK: 20 },
          },
          options,
        );
        for (const t of response.trace) {
          if (!/^(memories|documents|sessions)\//.test(t.id)) continue;
          count('BuildContext trace items checked');
          // Synthetic ids of the session's own state (`sessions/…/state/summary`, key points, …)
          // belong to the session.
          const item =
            items.get(t.id) ??
            (t.id.includes('/state/') ? items.get(/^sessions\/[^/]+/.exec(t.id)![0]) : undefined);
          if (item === undefined) violations.push(`UNKNOWN ${where}: traced ${t.id}`);
          else if (item.type === 'message' ? !owns(item, p) : !visible(item, p))
            violations.push(
              `LEAK ${where}: traced ${t.id} (${item.tenant}/${item.owner} ${Scope[item.scope]} ${item.orgId})`,
            );
        }
        const text = response.messages.map((m) => m.content).join('\n');
        for (const i of markerOwners) {
          if (!text.includes(i.marker!)) continue;
          count('BuildContext rendered markers checked');
          const ok = ['session', 'message', 'memCell', 'state'].includes(i.type) ? owns(i, p) : visible(i, p);
          if (!ok)
            violations.push(
              `LEAK ${where}: rendered the text of ${i.type} ${i.name} (${i.tenant}/${i.owner} ${Scope[i.scope]} ${i.orgId})`,
            );
        }
      });
      await expectRead(`GetSessionState ${session.name} by ${who(p)}`, may, async () => {
        await context.getSessionState({ name: `${session.name}/state` }, options);
      });
    });
    report();
  }, 240_000);
});
