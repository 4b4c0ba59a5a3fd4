/**
 * The read by ids of Search's hydration, as it was and as it is (decision 0045), call by call on
 * the same database:
 *
 *   npm run bench:store-reads -- [--size 100000] [--ids 40] [--calls 400] [--backends sqlite,mariadb]
 *     [--out bench/out/store-reads.json]
 *
 * Seeds `--size` memories in one tenant (ten owners) through `MemoryRepository.create`, into a fresh
 * SQLite file and, with `mariadb`, a fresh `engram_test_perf_*` database on the server of
 * `scripts/ensure-mariadb.sh`. Then `--calls` times: `--ids` random ids of the seeded memories (a
 * fifth of them absent), read (a) with the plain `tenant_id = ? AND id IN (…)` the repositories sent
 * before 0045 and (b) with `MemoryRepository.getMany` (its `filterOnly` tenant term), in alternating
 * order. Prints each one's p50/p95/p99, the paired mean difference with its 95 % bootstrap interval,
 * the geometric mean of the per-call ratio a/b with its interval, and each query's plan.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { MemoryRepository, migrateToLatest, newId, openStore, type Store } from '@engram/store';
import { seededRandom } from '@engram/testing';
import { scratchMariadbDatabase } from './lib/mariadb.js';
import { summarize } from './perf/stats.js';
import { bootstrapCi, pairedBootstrapCi } from './retrieval/metrics.js';

const WORKSPACE = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TENANT = 'bench';

const { values: args } = parseArgs({
  options: {
    size: { type: 'string', default: '100000' },
    ids: { type: 'string', default: '40' },
    calls: { type: 'string', default: '400' },
    backends: { type: 'string', default: 'sqlite,mariadb' },
    out: { type: 'string', default: 'bench/out/store-reads.json' },
  },
});
const size = Number(args.size);
const idsPerCall = Number(args.ids);
const calls = Number(args.calls);
const backends = args.backends.split(',').filter((b) => b !== '');
for (const b of backends) if (b !== 'sqlite' && b !== 'mariadb') throw new Error(`--backends: unknown ${b}`);

async function seed(store: Store): Promise<string[]> {
  await migrateToLatest(store.db);
  const repo = new MemoryRepository(store);
  const ids: string[] = [];
  const now = Date.now();
  for (let from = 0; from < size; from += 500) {
    await store.db.transaction().execute(async (trx) => {
      for (let i = from; i < Math.min(size, from + 500); i++) {
        const created = await repo.create(
          trx,
          {
            tenantId: TENANT,
            ownerId: `u${i % 10}`,
            orgId: '',
            scope: 'SELF',
            type: 'FACT',
            namespace: '',
            key: '',
            text: `memory ${i}: the user mentioned item number ${i} in passing`,
            evergreen: false,
            sourceKind: 'EXPLICIT_USER_STATEMENT',
            confidence: 0.9,
            evidence: { messageIds: [], chunkIds: [] },
            languageCode: '',
            metadata: {},
          },
          { action: 'CREATE', actorKind: 'SYSTEM', actorId: 'store-reads-bench', reason: 'benchmark seed' },
          now - (size - i),
        );
        ids.push(created.id);
      }
    });
  }
  return ids;
}

/** The read before decision 0045: the tenant as a plain equality, which SQLite may serve by an index. */
async function readBefore(store: Store, ids: readonly string[]): Promise<number> {
  const rows = await store.db
    .selectFrom('memories')
    .selectAll()
    .where('tenant_id', '=', TENANT)
    .where('id', 'in', [...ids])
    .execute();
  return rows.length;
}

async function plan(store: Store, ids: readonly string[], tenantTerm: string): Promise<string> {
  const list = sql.join(ids.map((id) => sql.lit(id)));
  if (store.dialect === 'sqlite') {
    const query = sql<{
      detail: string;
    }>`EXPLAIN QUERY PLAN SELECT * FROM memories WHERE ${sql.raw(tenantTerm)} = ${sql.lit(TENANT)} AND id IN (${list})`;
    return (await query.execute(store.db)).rows.map((r) => r.detail).join(' | ');
  }
  const query = sql<{
    key: string | null;
    type: string;
    rows: number;
  }>`EXPLAIN SELECT * FROM memories WHERE ${sql.raw(tenantTerm)} = ${sql.lit(TENANT)} AND id IN (${list})`;
  return (await query.execute(store.db)).rows
    .map((r) => `${r.type} ${r.key ?? '-'} rows=${r.rows}`)
    .join(' | ');
}

async function measure(name: string, store: Store): Promise<Record<string, unknown>> {
  const started = performance.now();
  const seeded = await seed(store);
  const seedMs = performance.now() - started;
  const repo = new MemoryRepository(store);
  const random = seededRandom(7);
  const pick = () =>
    Array.from({ length: idsPerCall }, () =>
      random() < 0.2 ? newId() : (seeded[Math.floor(random() * seeded.length)] ?? newId()),
    );
  const before: number[] = [];
  const after: number[] = [];
  for (let i = 0; i < 20; i++) {
    const ids = pick();
    await readBefore(store, ids);
    await repo.getMany(TENANT, ids);
  }
  for (let i = 0; i < calls; i++) {
    const ids = pick();
    const timeBefore = async () => {
      const t = performance.now();
      const n = await readBefore(store, ids);
      before.push(performance.now() - t);
      return n;
    };
    const timeAfter = async () => {
      const t = performance.now();
      const n = (await repo.getMany(TENANT, ids)).size;
      after.push(performance.now() - t);
      return n;
    };
    let a: number;
    let b: number;
    if (i % 2 === 0) {
      a = await timeBefore();
      b = await timeAfter();
    } else {
      b = await timeAfter();
      a = await timeBefore();
    }
    if (a !== b) throw new Error(`the two reads disagree: ${a} and ${b} rows`);
  }
  const sample = pick();
  const result = {
    backend: name,
    size,
    idsPerCall,
    calls,
    seedMs: Math.round(seedMs),
    before: summarize(before),
    after: summarize(after),
    meanDifferenceMs: pairedBootstrapCi(before, after),
    geometricRatio: (() => {
      const ci = bootstrapCi(before.map((b, i) => Math.log(b / (after[i] ?? b))));
      return { mean: Math.exp(ci.mean), low: Math.exp(ci.low), high: Math.exp(ci.high) };
    })(),
    planBefore: await plan(store, sample, 'tenant_id'),
    planAfter: await plan(store, sample, store.dialect === 'sqlite' ? '+tenant_id' : 'tenant_id'),
  };
  const f = (n: number) => n.toFixed(3);
  console.log(
    `${name} ${size}: before p50/p95/p99 ${f(result.before.p50)}/${f(result.before.p95)}/${f(result.before.p99)} ms; ` +
      `after ${f(result.after.p50)}/${f(result.after.p95)}/${f(result.after.p99)} ms; ` +
      `mean difference ${f(result.meanDifferenceMs.mean)} ms [${f(result.meanDifferenceMs.low)}, ${f(result.meanDifferenceMs.high)}]; ` +
      `ratio before/after ${result.geometricRatio.mean.toFixed(2)}x [${result.geometricRatio.low.toFixed(2)}, ${result.geometricRatio.high.toFixed(2)}]`,
  );
  console.log(`  plan before: ${result.planBefore}\n  plan after:  ${result.planAfter}`);
  return result;
}

async function mariadb(): Promise<{ store: Store; drop: () => Promise<void> }> {
  const database = await scratchMariadbDatabase('engram_test_perf_reads_');
  const store = openStore({ target: database.url });
  return {
    store,
    drop: async () => {
      await store.close();
      await database.drop();
    },
  };
}

const results: Record<string, unknown>[] = [];
for (const backend of backends) {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'engram-reads-'));
    const store = openStore({ target: join(dir, 'engram.db') });
    try {
      results.push(await measure('sqlite', store));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    const { store, drop } = await mariadb();
    try {
      results.push(await measure('mariadb', store));
    } finally {
      await drop();
    }
  }
}
const out = resolve(WORKSPACE, args.out);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ date: new Date().toISOString(), results }, null, 2)}\n`);
console.log(`wrote ${out}`);
