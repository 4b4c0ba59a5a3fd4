import type { ServiceMetrics } from '@engram/runtime';
import { run, type Store } from '@engram/store';

const STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED'] as const;

/**
 * Governance's gauge, read from the source of truth at each scrape (all tenants):
 * `engram_extraction_jobs{state}`, every state present (0 when none).
 */
export function registerGovernanceMetrics(metrics: ServiceMetrics, store: Store): void {
  metrics.gauge({
    name: 'engram_extraction_jobs',
    help: 'Extraction jobs in the source of truth, by state.',
    labelNames: ['state'],
    sample: async () => {
      const rows = await run(store, (db) =>
        db
          .selectFrom('extraction_jobs')
          .select((eb) => ['state', eb.fn.countAll<number | string>().as('n')])
          .groupBy('state')
          .execute(),
      );
      const counts = new Map<string, number>(rows.map((r) => [r.state, Number(r.n)]));
      const states = new Set<string>([...STATES, ...counts.keys()]);
      return [...states].map((state) => ({ labels: { state }, value: counts.get(state) ?? 0 }));
    },
  });
}
