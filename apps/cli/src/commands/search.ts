import { toJson } from '@bufbuild/protobuf';
import type { Command } from 'commander';
import { ItemKind } from '@engram/contracts/common';
import { MemoryType } from '@engram/contracts/governance';
import { SearchResponseSchema, type SearchResponse, type SearchResult } from '@engram/contracts/retrieval';
import { action, collect, parser } from '../actions.js';
import type { CliRuntime } from '../context.js';
import {
  enumLabel,
  formatScore,
  memoryContent,
  oneLine,
  parseKind,
  parsePositiveInt,
  renderTable,
} from '../format.js';

/** The text a result stands for, in one line. */
export function resultText(result: SearchResult, max = 70): string {
  const item = result.item;
  switch (item.case) {
    case 'memory':
      return oneLine(`${enumLabel(MemoryType, item.value.type)}: ${memoryContent(item.value)}`, max);
    case 'chunk': {
      const document = result.document?.displayName ?? '';
      return oneLine(`${document === '' ? '' : `[${document}] `}${item.value.text}`, max);
    }
    case 'round':
      return oneLine(item.value.text, max);
    default:
      return '';
  }
}

/** Rows of the results table; with `explain`, the score breakdown (search.proto, decision 0022). */
export function searchRows(response: SearchResponse, explain: boolean): { head: string[]; rows: string[][] } {
  const head = ['#', 'kind', 'score', 'item', 'name'];
  if (explain) head.push('vector', 'text', 'fused', 'recency', 'mmr', 'terms');
  const rows = response.results.map((r) => {
    const row = [
      String(r.rank),
      enumLabel(ItemKind, r.kind),
      formatScore(r.score),
      resultText(r, explain ? 40 : 70),
      r.name,
    ];
    const b = r.breakdown;
    if (explain) {
      row.push(
        b === undefined
          ? '-'
          : `${formatScore(b.vectorRaw)}→${formatScore(b.vectorNormalized, 2)} #${b.denseRank || '-'}`,
        b === undefined
          ? '-'
          : `${formatScore(b.textRaw)}→${formatScore(b.textNormalized, 2)} #${b.lexicalRank || '-'}`,
        formatScore(b?.fused),
        b === undefined
          ? '-'
          : `×${formatScore(b.recencyMultiplier)} (${b.ageDays.toFixed(1)}d)` +
              (b.timeWindowFactor < 1 ? ` window ×${formatScore(b.timeWindowFactor, 2)}` : '') +
              (b.supersedes === '' ? '' : ' newer'),
        b === undefined ? '-' : `${formatScore(b.mmrScore)} (sim ${formatScore(b.maxSimilarity, 2)})`,
        oneLine(b?.matchedTerms.join(' ') ?? '', 30),
      );
    }
    return row;
  });
  return { head, rows };
}

interface SearchOptions {
  readonly explain?: boolean;
  readonly kind?: ('MEMORY' | 'CHUNK' | 'ROUND')[];
  readonly topK?: number;
}

/** `engram search`: hybrid retrieval over memories, chunks and rounds. */
export function registerSearch(program: Command, io: CliRuntime): void {
  program
    .command('search')
    .description('search memories, document chunks and conversation rounds')
    .argument('<query>', 'what to look for')
    .option('--explain', 'show the score breakdown (vector, text, fusion, decay, MMR)')
    .option(
      '--kind <kind>',
      'only this kind: memory, chunk or round (repeatable)',
      (value: string, previous: ('MEMORY' | 'CHUNK' | 'ROUND')[] | undefined) =>
        collect(parser(parseKind)(value), previous) as ('MEMORY' | 'CHUNK' | 'ROUND')[],
    )
    .option(
      '-k, --top-k <n>',
      'number of results (server default 10)',
      parser((v) => parsePositiveInt('--top-k', v)),
    )
    .action(
      action(io, async ({ out, connect }, command, query) => {
        const options = command.opts<SearchOptions>();
        const connection = await connect();
        const response = await connection.retrieval.search({
          query: String(query),
          explain: options.explain === true,
          allowDegraded: true,
          ...(options.topK === undefined ? {} : { topK: options.topK }),
          ...(options.kind === undefined ? {} : { filter: { kinds: options.kind.map((k) => ItemKind[k]) } }),
        });
        out.document(toJson(SearchResponseSchema, response));
        const stats = response.stats;
        if (stats?.degraded === true) {
          out.line(out.color.yellow(`degraded: ${stats.degradedMessage || 'lexical results only'}`));
        }
        if (response.results.length === 0) {
          out.line('no results');
          return;
        }
        const { head, rows } = searchRows(response, options.explain === true);
        out.line(renderTable(head, rows));
        if (stats !== undefined && options.explain === true) {
          out.line(
            out.color.dim(
              `candidates: ${stats.denseCandidates} dense, ${stats.lexicalCandidates} lexical, ${stats.mergedCandidates} merged; dropped ${stats.driftDropped} (drift), ${stats.minScoreDropped} (min score); model ${stats.embeddingModel || '-'}`,
            ),
          );
        }
      }),
    );
}
