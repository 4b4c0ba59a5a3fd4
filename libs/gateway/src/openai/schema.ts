/**
 * The chat-completions request body the proxy accepts (zod 4): the OpenAI wire format, checked
 * before any RPC is called, so a malformed body is a 400 naming the field. Fields Chat cannot honour
 * with a non-default value (`n` above 1, a forced `tool_choice`, a structured `response_format`,
 * `logprobs`, audio output, the deprecated `functions`) are refused; fields that only tune the
 * upstream call and have no Chat counterpart (`seed`, `user`, penalties, …) are accepted and
 * ignored (docs/openai-proxy.md lists them).
 */
import { z } from 'zod';

/** The text of a message: a string or an array of text parts (other part types are refused). */
const contentSchema = z.union([
  z.string(),
  z.array(z.object({ type: z.literal('text'), text: z.string() }), {
    error: 'expected a string or an array of text parts (images, audio and files are not supported)',
  }),
]);

const nameSchema = z.string().optional();

const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const messageSchema = z.discriminatedUnion(
  'role',
  [
    z.object({ role: z.literal('system'), content: contentSchema, name: nameSchema }),
    z.object({ role: z.literal('developer'), content: contentSchema, name: nameSchema }),
    z.object({ role: z.literal('user'), content: contentSchema, name: nameSchema }),
    z.object({
      role: z.literal('assistant'),
      content: contentSchema.nullish(),
      name: nameSchema,
      tool_calls: z.array(toolCallSchema).nullish(),
      refusal: z.string().nullish(),
    }),
    z.object({ role: z.literal('tool'), content: contentSchema, tool_call_id: z.string().min(1) }),
  ],
  { error: 'expected role system, developer, user, assistant or tool' },
);

const toolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const positiveInt = z.number().int().positive().nullish();

/** An option only its default value (or null, or absence) of which is accepted; otherwise `message`. */
const onlyDefault = <T extends z.ZodType>(schema: T, message: string) =>
  z.union([schema, z.null(), z.undefined()], { error: message }).optional();

export const chatCompletionBodySchema = z.looseObject({
  model: z.string().min(1).max(128),
  messages: z.array(messageSchema).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: positiveInt,
  max_completion_tokens: positiveInt,
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  tools: z.array(toolSchema).nullish(),
  tool_choice: onlyDefault(z.literal('auto'), 'only "auto" is supported (Chat lets the model choose)'),
  n: onlyDefault(z.literal(1), 'only 1 choice is supported'),
  response_format: onlyDefault(
    z.object({ type: z.literal('text') }),
    'only {"type":"text"} is supported (Chat answers free text)',
  ),
  logprobs: onlyDefault(z.literal(false), 'log probabilities are not supported'),
  audio: onlyDefault(z.never(), 'audio output is not supported'),
  modalities: onlyDefault(z.tuple([z.literal('text')]), 'only the text modality is supported'),
  functions: onlyDefault(z.never(), 'the deprecated `functions` are not supported: use `tools`'),
  function_call: onlyDefault(z.never(), 'the deprecated `function_call` is not supported: use `tools`'),
});

export type ChatCompletionBody = z.output<typeof chatCompletionBodySchema>;
export type BodyMessage = ChatCompletionBody['messages'][number];
