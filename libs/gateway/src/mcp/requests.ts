/**
 * Tool arguments → RPC requests: pure mappings, no I/O. Names are accepted with or without their
 * collection (`memories/abc` or `abc`); every value rule is left to the RPC.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { ItemKind } from '@engram/contracts/common';
import type { BuildContextRequestSchema } from '@engram/contracts/context';
import {
  MemoryStatus,
  MemoryType,
  type DeleteMemoryRequestSchema,
  type ListMemoriesRequestSchema,
  type UpdateMemoryRequestSchema,
} from '@engram/contracts/governance';
import { MessageRole, type AppendMessagesRequestSchema } from '@engram/contracts/ingestion';
import type { SearchRequestSchema } from '@engram/contracts/retrieval';
import { errors } from '@engram/errors';
import type {
  ArgsOf,
  addMessagesArgs,
  buildContextArgs,
  deleteMemoryArgs,
  listMemoriesArgs,
  searchMemoryArgs,
  updateMemoryArgs,
} from './schemas.js';

/** The default token budget of `build_context`. */
export const DEFAULT_CONTEXT_BUDGET = 4096;
/** The default page size of `list_memories`. */
export const DEFAULT_LIST_PAGE_SIZE = 20;

/** `abc` → `memories/abc`; `memories/abc` unchanged. */
export function nameIn(collection: 'memories' | 'sessions', idOrName: string): string {
  const trimmed = idOrName.trim();
  return trimmed.startsWith(`${collection}/`) ? trimmed : `${collection}/${trimmed}`;
}

const upper = <T extends string>(value: T) => value.toUpperCase() as Uppercase<T>;

/** `search_memory` → retrieval.Search (degraded lexical-only answers allowed, and flagged). */
export function searchRequest(
  args: ArgsOf<typeof searchMemoryArgs>,
): MessageInitShape<typeof SearchRequestSchema> {
  return {
    query: args.query,
    explain: args.explain === true,
    allowDegraded: true,
    ...(args.top_k === undefined ? {} : { topK: args.top_k }),
    ...(args.kinds === undefined || args.kinds.length === 0
      ? {}
      : { filter: { kinds: args.kinds.map((k) => ItemKind[upper(k)]) } }),
  };
}

/** `add_messages` → ingestion.AppendMessages to `session`. */
export function appendRequest(
  session: string,
  args: Pick<ArgsOf<typeof addMessagesArgs>, 'messages'>,
): MessageInitShape<typeof AppendMessagesRequestSchema> {
  return {
    parent: session,
    messages: args.messages.map((m) => ({
      role: m.role === 'user' ? MessageRole.USER : MessageRole.ASSISTANT,
      content: m.content,
    })),
  };
}

/** `build_context` → context.BuildContext, with the trace. */
export function buildContextRequest(
  args: ArgsOf<typeof buildContextArgs>,
): MessageInitShape<typeof BuildContextRequestSchema> {
  return {
    session: nameIn('sessions', args.session),
    userMessage: args.message,
    budget: { totalTokens: args.budget ?? DEFAULT_CONTEXT_BUDGET },
    includeTrace: true,
    ...(args.model === undefined ? {} : { model: args.model }),
    ...(args.system_prompt === undefined ? {} : { systemPrompt: args.system_prompt }),
  };
}

/** `list_memories` → governance.ListMemories. */
export function listMemoriesRequest(
  args: ArgsOf<typeof listMemoriesArgs>,
): MessageInitShape<typeof ListMemoriesRequestSchema> {
  return {
    pageSize: args.page_size ?? DEFAULT_LIST_PAGE_SIZE,
    pageToken: args.page_token ?? '',
    types: (args.types ?? []).map((t) => MemoryType[upper(t)]),
    statuses: (args.statuses ?? []).map((s) => MemoryStatus[upper(s)]),
    evergreenOnly: args.evergreen_only === true,
  };
}

/**
 * `update_memory` → governance.UpdateMemory: the mask names exactly the fields given. Nothing to
 * change is refused here (FIELD_REQUIRED `update_mask`, as the RPC would answer an empty mask).
 */
export function updateMemoryRequest(
  args: ArgsOf<typeof updateMemoryArgs>,
): MessageInitShape<typeof UpdateMemoryRequestSchema> {
  const memory: NonNullable<MessageInitShape<typeof UpdateMemoryRequestSchema>['memory']> = {
    name: nameIn('memories', args.name),
  };
  const paths: string[] = [];
  if (args.text !== undefined) {
    memory.text = args.text;
    paths.push('text');
  }
  if (args.value !== undefined) {
    memory.value = args.value as NonNullable<typeof memory.value>;
    paths.push('value');
  }
  if (args.evergreen !== undefined) {
    memory.evergreen = args.evergreen;
    paths.push('evergreen');
  }
  if (args.confidence !== undefined) {
    memory.confidence = args.confidence;
    paths.push('confidence');
  }
  if (paths.length === 0) {
    throw errors.invalidArgument(
      'FIELD_REQUIRED',
      'update_memory needs at least one of text, value, evergreen or confidence',
      { field: 'update_mask' },
    );
  }
  return { memory, updateMask: { paths }, etag: args.etag ?? '' };
}

/** `delete_memory` → governance.DeleteMemory. */
export function deleteMemoryRequest(
  args: ArgsOf<typeof deleteMemoryArgs>,
): MessageInitShape<typeof DeleteMemoryRequestSchema> {
  return {
    name: nameIn('memories', args.name),
    purge: args.purge === true,
    ...(args.reason === undefined ? {} : { reason: args.reason }),
  };
}
