import { toJson } from '@bufbuild/protobuf';
import type { Command } from 'commander';
import {
  BuildContextResponseSchema,
  ChatRole,
  ContextLayer,
  LayerStatus,
  TraceItemKind,
  TraceReason,
  type BuildContextResponse,
} from '@engram/contracts/context';
import { action, parser } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { enumLabel, formatScore, oneLine, parsePositiveInt, renderTable, resourceName } from '../format.js';
import type { Output } from '../output.js';

export const DEFAULT_BUDGET = 4096;

/** One row of the trace table: layer, item, tokens, score, reason (and the injection flag). */
export function traceRows(response: BuildContextResponse): string[][] {
  return response.trace.map((item) => [
    enumLabel(ContextLayer, item.layer),
    `${enumLabel(TraceItemKind, item.kind)} ${item.id}`.trim(),
    String(item.tokens),
    formatScore(item.score),
    `${enumLabel(TraceReason, item.reason)}${item.detail === '' ? '' : `: ${oneLine(item.detail, 60)}`}` +
      (item.injectionSuspected ? ` (injection suspected: ${item.injectionPatterns.join(', ')})` : ''),
  ]);
}

/** Prints an assembled context: messages, then the per-layer usage and the trace. */
export function printAssembly(out: Output, response: BuildContextResponse): void {
  const { color } = out;
  response.messages.forEach((message, i) => {
    out.line(
      color.bold(`[${enumLabel(ChatRole, message.role).toLowerCase()}]`) +
        color.dim(` ${response.messageTokens[i] ?? '?'} tokens`),
    );
    out.line(message.content);
    out.line();
  });
  out.line(
    renderTable(
      ['layer', 'status', 'budget', 'used', 'items', 'dropped'],
      response.layers.map((l) => [
        enumLabel(ContextLayer, l.layer),
        enumLabel(LayerStatus, l.status),
        String(l.budgetTokens),
        String(l.usedTokens),
        String(l.itemsIncluded),
        String(l.itemsDropped),
      ]),
    ),
  );
  out.line(renderTable(['layer', 'item', 'tokens', 'score', 'reason'], traceRows(response)));
  const tokenizer = response.tokenizer;
  out.line(
    `total ${response.totalTokens} of ${response.budgetTokens} tokens` +
      (tokenizer === undefined
        ? ''
        : ` (${tokenizer.encoding}${tokenizer.approximate ? ', approximate' : ''} for ${tokenizer.model || 'default model'})`) +
      (response.compactionRecommended ? color.yellow('; compaction recommended') : ''),
  );
}

/** `engram context`: what BuildContext would send to a model for a message, with its trace. */
export function registerContext(program: Command, io: CliRuntime): void {
  program
    .command('context')
    .description('assemble the context for a message in a session (messages and trace)')
    .argument('<message>', 'the user message to build the context for')
    .requiredOption('-s, --session <session>', 'session name or id')
    .option(
      '--budget <tokens>',
      'total token budget',
      parser((v) => parsePositiveInt('--budget', v)),
      DEFAULT_BUDGET,
    )
    .option('--model <model>', 'model name (picks the tokenizer)')
    .option('--system <prompt>', 'system prompt')
    .action(
      action(io, async ({ out, connect }, command, message) => {
        const options = command.opts<{ session: string; budget: number; model?: string; system?: string }>();
        const connection = await connect();
        const response = await connection.context.buildContext({
          session: resourceName('sessions', options.session),
          userMessage: String(message),
          budget: { totalTokens: options.budget },
          includeTrace: true,
          ...(options.model === undefined ? {} : { model: options.model }),
          ...(options.system === undefined ? {} : { systemPrompt: options.system }),
        });
        out.document(toJson(BuildContextResponseSchema, response));
        printAssembly(out, response);
      }),
    );
}
