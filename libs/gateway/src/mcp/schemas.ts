import { z } from 'zod';

/**
 * The tools' argument schemas (zod 4 raw shapes, as `McpServer.registerTool` takes them; the SDK
 * publishes them as JSON Schema and answers a violation with its own input validation error). They
 * check shape only: every value rule (lengths, names, budgets) is the RPC's own.
 */
const memoryName = z
  .string()
  .min(1)
  .describe('the memory, as `memories/<id>` or just `<id>` (from search_memory or list_memories)');
const sessionName = z.string().min(1).describe('the session, as `sessions/<id>` or just `<id>`');

export const memoryTypes = ['fact', 'episode', 'event', 'foresight', 'summary'] as const;
export const memoryStatuses = ['active', 'quarantined', 'superseded', 'expired', 'deleted'] as const;
export const itemKinds = ['memory', 'chunk', 'round'] as const;
export const documentMimeTypes = ['text/plain', 'text/markdown', 'text/html'] as const;

export const searchMemoryArgs = {
  query: z.string().min(1).describe('what to look for, in natural language'),
  kinds: z
    .array(z.enum(itemKinds))
    .optional()
    .describe(
      'only these kinds: memory (governed memories), chunk (document passages), round (past conversation turns); default all',
    ),
  top_k: z.number().int().min(1).max(100).optional().describe('number of results (server default 10)'),
  explain: z.boolean().optional().describe('include the score breakdown of each result'),
};

export const rememberArgs = {
  text: z
    .string()
    .min(1)
    .describe(
      'the statement to remember, in the user\'s words, e.g. "From now on please answer more concisely."',
    ),
};

export const addMessagesArgs = {
  session: sessionName
    .optional()
    .describe('the session to append to; omit it and set create_session to start one'),
  create_session: z
    .boolean()
    .optional()
    .describe('create a new session for these messages (its name is returned)'),
  display_name: z.string().optional().describe('display name of a created session'),
  messages: z
    .array(
      z.object({
        role: z.enum(['user', 'assistant']).describe('who said it'),
        content: z.string().min(1).describe('what was said'),
      }),
    )
    .min(1)
    .describe('the messages, oldest first'),
};

export const buildContextArgs = {
  session: sessionName,
  message: z.string().min(1).describe('the user message the context is built for'),
  budget: z.number().int().min(1).optional().describe('total token budget (default 4096)'),
  model: z.string().optional().describe('the model the context is for (picks the tokenizer)'),
  system_prompt: z.string().optional().describe('a system prompt to put first'),
};

export const listMemoriesArgs = {
  types: z.array(z.enum(memoryTypes)).optional().describe('only these memory types'),
  statuses: z.array(z.enum(memoryStatuses)).optional().describe('only these statuses (default active)'),
  evergreen_only: z.boolean().optional().describe('only evergreen memories (the profile)'),
  page_size: z.number().int().min(1).max(100).optional().describe('at most this many (default 20)'),
  page_token: z.string().optional().describe('the next_page_token of the previous page'),
};

export const getMemoryArgs = { name: memoryName };

export const updateMemoryArgs = {
  name: memoryName,
  text: z.string().optional().describe('the new text'),
  value: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('the new structured value (FACT memories with a key)'),
  evergreen: z.boolean().optional().describe('whether it is always part of the context (the profile)'),
  confidence: z.number().min(0).max(1).optional().describe('the new confidence, 0 to 1'),
  etag: z.string().optional().describe('the etag read earlier: fail instead of overwriting a newer change'),
};

export const deleteMemoryArgs = {
  name: memoryName,
  reason: z.string().optional().describe('why (recorded in the revision)'),
  purge: z.boolean().optional().describe('erase the content for good instead of a restorable delete'),
};

export const ingestDocumentArgs = {
  text: z.string().min(1).optional().describe('the document text (give text or path)'),
  path: z.string().min(1).optional().describe('a local file to ingest (stdio server only)'),
  display_name: z.string().optional().describe('the document title (default the file name)'),
  mime_type: z
    .enum(documentMimeTypes)
    .optional()
    .describe('default: from the file extension, else text/plain'),
  wait_for_index: z.boolean().optional().describe('wait until it is searchable (default true)'),
};

/** The exact confirmation `forget_user` requires. */
export const FORGET_CONFIRMATION = 'forget me';

export const forgetUserArgs = {
  confirm: z
    .string()
    .optional()
    .describe(`must be exactly "${FORGET_CONFIRMATION}": the erasure cannot be undone`),
  subject: z
    .string()
    .min(1)
    .optional()
    .describe('another user to forget (needs the admin role); default: the caller'),
  reason: z
    .string()
    .optional()
    .describe('why, recorded on the receipt (must not contain the erased content)'),
};

type Shape = Record<string, z.ZodType>;
/** The parsed arguments of a tool with argument shape `S`. */
export type ArgsOf<S extends Shape> = z.infer<z.ZodObject<S>>;
