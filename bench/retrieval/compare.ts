/**
 * Paired comparison of two bench:retrieval reports of the same dataset (e.g. main before and after
 * a change), question by question: mean difference with its paired bootstrap 95 % interval, per
 * split and metric.
 *
 *   node --conditions=@engram/source --import tsx bench/retrieval/compare.ts <before.json> <after.json>
 *     [--before-mode hybrid] [--after-mode defaults]
 *
 * Reports written before the splits existed (no `split` per question) are split here by the same
 * rule (`splits.ts`), from the dataset file the report names.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadDataset } from './dataset.js';
import { pairedBootstrapCi } from './metrics.js';
import { splitsOf } from './splits.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'before-mode': { type: 'string', default: 'defaults' },
    'after-mode': { type: 'string', default: 'defaults' },
  },
});
const [beforePath, afterPath] = positionals;
if (beforePath === undefined || afterPath === undefined)
  throw new Error('usage: compare.ts <before.json> <after.json>');

interface Report {
  readonly file: string;
  readonly modes: Record<
    string,
    { perQuestion: ({ id: string; split?: string } & Record<string, number | string>)[] }
  >;
}
const before = JSON.parse(readFileSync(beforePath, 'utf8')) as Report;
const after = JSON.parse(readFileSync(afterPath, 'utf8')) as Report;
const splitOf = splitsOf(loadDataset(after.file));
const rows = (report: Report, mode: string) => {
  const perQuestion = report.modes[mode]?.perQuestion;
  if (perQuestion === undefined) throw new Error(`no mode ${mode} in the report`);
  return new Map(perQuestion.map((q) => [q.id, q]));
};
const a = rows(before, args['before-mode']);
const b = rows(after, args['after-mode']);
for (const split of ['tune', 'report', 'all'] as const) {
  const ids = [...b.keys()].filter((id) => a.has(id) && (split === 'all' || splitOf.get(id) === split));
  if (ids.length === 0) continue;
  const parts = (['R@5', 'R@10', 'R@25', 'NDCG@10'] as const).map((metric) => {
    const d = pairedBootstrapCi(
      ids.map((id) => Number(b.get(id)![metric])),
      ids.map((id) => Number(a.get(id)![metric])),
    );
    return `${metric} ${d.mean >= 0 ? '+' : ''}${d.mean.toFixed(3)} [${d.low.toFixed(3)}, ${d.high.toFixed(3)}]`;
  });
  process.stdout.write(
    `${split.padEnd(6)} n=${String(ids.length).padStart(4)}  after − before: ${parts.join('  ')}\n`,
  );
}
