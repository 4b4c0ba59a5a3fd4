/**
 * The short texts tool results give the model: one line per item, item text quoted inside a
 * labelled stored-data block (results.ts). The full answers travel as `structuredContent`.
 */
import { ItemKind } from '@engram/contracts/common';
import { ChatRole, ContextLayer, TraceReason, type BuildContextResponse } from '@engram/contracts/context';
import {
  DecisionOutcome,
  ExtractionJobState,
  MemoryStatus,
  MemoryType,
  RevisionAction,
  type ExtractionJob,
  type Memory,
  type MemoryRevision,
} from '@engram/contracts/governance';
import { MemCellStatus } from '@engram/contracts/ingestion';
import type { SearchResponse, SearchResult } from '@engram/contracts/retrieval';
import type { RememberOutcome } from '../remember.js';
import { enumName, quoted, storedData } from './results.js';

/** The content of a memory or candidate in one line: `namespace/key = {json}` for a keyed FACT, else its text. */
export function memoryContent(memory: {
  readonly namespace: string;
  readonly key: string;
  readonly value?: Readonly<Record<string, unknown>> | undefined;
  readonly text: string;
}): string {
  if (memory.key === '' && memory.namespace === '') return memory.text;
  const key = `${memory.namespace}/${memory.key}`;
  // The value says it; the text is a paraphrase of it.
  if (memory.value !== undefined) return `${key} = ${JSON.stringify(memory.value)}`;
  return memory.text === '' ? key : `${key}: ${memory.text}`;
}

/** `memories/abc (FACT, ACTIVE, evergreen): "…"`. */
export function memoryLine(memory: Memory): string {
  const flags = [enumName(MemoryType, memory.type), enumName(MemoryStatus, memory.status)];
  if (memory.evergreen) flags.push('evergreen');
  return `${memory.name} (${flags.join(', ')}): ${quoted(memoryContent(memory))}`;
}

function resultText(result: SearchResult): string {
  const item = result.item;
  switch (item.case) {
    case 'memory':
      return `${enumName(MemoryType, item.value.type)} ${quoted(memoryContent(item.value))}`;
    case 'chunk': {
      const title = result.document?.displayName ?? '';
      return `${title === '' ? '' : `from ${quoted(title, 80)} `}${quoted(item.value.text)}`;
    }
    case 'round':
      return quoted(item.value.text);
    default:
      return '';
  }
}

/** The search answer in a few lines. */
export function searchText(query: string, response: SearchResponse): string {
  const head = `${response.results.length} result(s) for ${quoted(query, 120)}`;
  const degraded =
    response.stats?.degraded === true
      ? ` (degraded: ${response.stats.degradedMessage || 'lexical results only'})`
      : '';
  const lines = response.results.map(
    (r) =>
      `${r.rank}. ${enumName(ItemKind, r.kind).toLowerCase()} ${r.name} score ${r.score.toFixed(3)}: ${resultText(r)}`,
  );
  return [`${head}${degraded}.`, storedData(lines)].filter((t) => t !== '').join('\n');
}

/** Memories, one line each. */
export function memoriesText(memories: readonly Memory[], more: boolean): string {
  const head =
    memories.length === 0
      ? 'No memories.'
      : `${memories.length} memor${memories.length === 1 ? 'y' : 'ies'}${more ? ' (more with next_page_token)' : ''}.`;
  return [head, storedData(memories.map(memoryLine))].filter((t) => t !== '').join('\n');
}

/** A memory and its revisions (action, actor, reason), oldest first. */
export function memoryText(memory: Memory, revisions: readonly MemoryRevision[]): string {
  const history = revisions.map((r) => {
    const actor = r.actor === undefined ? '' : ` by ${r.actor.subject || r.actor.component}`;
    return `  v${r.version} ${enumName(RevisionAction, r.action)}${actor}${r.rule === '' ? '' : ` rule ${r.rule}`}`;
  });
  return [
    storedData([memoryLine(memory)]),
    `version ${memory.version}, etag ${memory.etag}; ${revisions.length} revision(s):`,
    ...history,
  ].join('\n');
}

/** Each decision of an extraction: outcome, rule, reason and the memory it wrote. */
export function decisionsText(job: ExtractionJob): string {
  if (job.decisions.length === 0)
    return 'Nothing to remember: the extractors proposed no candidate memory from this text.';
  const lines = job.decisions.map((d) => {
    const candidate = job.candidates[d.candidateIndex];
    const memory = d.memory;
    const content =
      memory !== undefined ? memoryContent(memory) : candidate !== undefined ? memoryContent(candidate) : '';
    const target = memory === undefined || memory.name === '' ? '' : ` → ${memory.name}`;
    return `${enumName(DecisionOutcome, d.outcome)}${d.rule === '' ? '' : ` (rule ${d.rule})`}${target}: ${quoted(content)}${d.reason === '' ? '' : ` — ${quoted(d.reason, 200)}`}`;
  });
  return [`${job.decisions.length} decision(s):`, storedData(lines)].join('\n');
}

/** The assembled messages (quoted, they carry memory) and the per-layer usage. */
export function contextText(response: BuildContextResponse): string {
  const messages = response.messages.map(
    (m, i) =>
      `[${enumName(ChatRole, m.role).toLowerCase()}, ${response.messageTokens[i] ?? '?'} tokens] ${quoted(m.content, 4_000)}`,
  );
  const layers = response.layers
    .filter((l) => l.itemsIncluded > 0 || l.itemsDropped > 0)
    .map(
      (l) =>
        `${enumName(ContextLayer, l.layer)} ${l.usedTokens}/${l.budgetTokens} tokens, ${l.itemsIncluded} in, ${l.itemsDropped} dropped`,
    );
  return [
    `Assembled ${response.messages.length} message(s), ${response.totalTokens} of ${response.budgetTokens} tokens.`,
    storedData(messages),
    ...(layers.length === 0 ? [] : ['Layers:', ...layers.map((l) => `  ${l}`)]),
  ].join('\n');
}

/** The short trace of an assembly: layer, item, tokens and why (no contents). */
export function shortTrace(response: BuildContextResponse) {
  return response.trace.map((t) => ({
    layer: enumName(ContextLayer, t.layer),
    id: t.id,
    tokens: t.tokens,
    reason: enumName(TraceReason, t.reason),
    ...(t.injectionSuspected ? { injectionSuspected: true } : {}),
  }));
}

/** What became of a remembered statement: redaction, the extraction's state and its decisions. */
export function rememberText(outcome: RememberOutcome): string {
  const { memCell, job, message } = outcome;
  const lines: string[] = [];
  if (outcome.redacted)
    lines.push(`A secret was redacted before storing; stored as ${quoted(message?.content ?? '')}.`);
  if (memCell === undefined) {
    lines.push('Nothing to extract: the session had no open messages.');
  } else if (job === undefined) {
    const error = memCell.lastErrorMessage === '' ? '' : ` (last error: ${memCell.lastErrorMessage})`;
    lines.push(
      `${memCell.name} is ${enumName(MemCellStatus, memCell.status)}; extraction has not started yet${error}.`,
    );
  } else if (job.state === ExtractionJobState.PENDING || job.state === ExtractionJobState.RUNNING) {
    lines.push(
      `Extraction ${job.name} is still ${enumName(ExtractionJobState, job.state)} after ${outcome.waitSeconds}s; its decisions will show in list_memories.`,
    );
  } else if (job.state === ExtractionJobState.FAILED) {
    lines.push(`Extraction ${job.name} FAILED: ${job.error?.message ?? 'no message'}.`);
  } else {
    lines.push(decisionsText(job));
  }
  return lines.join('\n');
}
