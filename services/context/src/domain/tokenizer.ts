import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { countInBoundedPieces } from '@engram/lexical';
import type { AssembledMessage, ToolDescription, Tokenizer } from './types.js';

/** The encodings context can count exactly. */
export type Encoding = 'o200k_base' | 'cl100k_base';

/** Options of {@link tokenizerFor}. */
export interface TokenizerOptions {
  /**
   * Extra exact mappings configured for the deployment: model-name prefix → encoding. They take
   * precedence over the built-in prefixes; among them the longest matching prefix wins.
   */
  readonly extraMappings?: Readonly<Record<string, Encoding>>;
}

/** Built-in exact mappings (see `TokenizerInfo` in the proto). Order does not matter: longest wins. */
const BUILT_IN_PREFIXES: readonly (readonly [string, Encoding])[] = [
  ['gpt-4o', 'o200k_base'],
  ['gpt-4.1', 'o200k_base'],
  ['gpt-4.5', 'o200k_base'],
  ['gpt-5', 'o200k_base'],
  ['o1', 'o200k_base'],
  ['o3', 'o200k_base'],
  ['o4', 'o200k_base'],
  ['gpt-4', 'cl100k_base'],
  ['gpt-3.5', 'cl100k_base'],
];

/**
 * Known context windows, by name prefix (longest matching prefix wins; `exact` entries must match
 * the whole name). Informational only: the assembly never rejects a larger budget.
 */
const CONTEXT_WINDOWS: readonly {
  readonly prefix: string;
  readonly exact?: boolean;
  readonly tokens: number;
}[] = [
  { prefix: 'gpt-4o', tokens: 128_000 },
  { prefix: 'gpt-4o-mini', tokens: 128_000 },
  { prefix: 'gpt-4.1', tokens: 1_047_576 },
  { prefix: 'gpt-3.5-turbo', tokens: 16_385 },
  { prefix: 'gpt-4-turbo', tokens: 128_000 },
  { prefix: 'gpt-4', exact: true, tokens: 8_192 },
  { prefix: 'gpt-4-0613', exact: true, tokens: 8_192 },
  { prefix: 'gpt-4-0314', exact: true, tokens: 8_192 },
];

/** Chat-format tokens per message and for reply priming, for both supported encodings. */
const TOKENS_PER_MESSAGE = 3;
const REPLY_PRIMING_TOKENS = 3;

/**
 * Tokens one tool call adds to an assistant message besides its name and arguments (the call's
 * framing). The same constant gpt-tokenizer and openai-chat-tokens use for a `function_call`
 * (`FUNCTION_CALL_METADATA_TOKEN_OVERHEAD` = 3); OpenAI does not document the exact figure.
 */
export const TOOL_CALL_OVERHEAD_TOKENS = 3;

/**
 * The per-encoding constants of the OpenAI cookbook's `num_tokens_for_tools` ("How to count tokens
 * with tiktoken"): `funcInit` per function, `propInit` once per function with properties, `propKey`
 * per property, `enumInit` per property with an enum (negative: the enum replaces part of the
 * type), `enumItem` per enum value, and `funcEnd` once per request with tools. The cookbook gives
 * 7 for gpt-4o/gpt-4o-mini (o200k_base) and 10 for gpt-3.5-turbo/gpt-4 (cl100k_base) as `funcInit`.
 */
const TOOL_FORMULA: Readonly<
  Record<
    Encoding,
    {
      readonly funcInit: number;
      readonly propInit: number;
      readonly propKey: number;
      readonly enumInit: number;
      readonly enumItem: number;
      readonly funcEnd: number;
    }
  >
> = {
  o200k_base: { funcInit: 7, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12 },
  cl100k_base: { funcInit: 10, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12 },
};

/** The factor applied to o200k_base counts for unknown models. */
const APPROXIMATE_SAFETY_FACTOR = 1.1;

/**
 * Text is counted as plain text: a special-token string such as `<|endoftext|>` inside user
 * content is just characters (gpt-tokenizer throws on it by default).
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/** Long runs without spaces are counted in pieces (see `countInBoundedPieces`). */
const RAW_COUNTERS: Readonly<Record<Encoding, (text: string) => number>> = {
  o200k_base: (text) =>
    text === '' ? 0 : countInBoundedPieces(text, (piece) => countO200k(piece, PLAIN_TEXT)),
  cl100k_base: (text) =>
    text === '' ? 0 : countInBoundedPieces(text, (piece) => countCl100k(piece, PLAIN_TEXT)),
};

function longestPrefix<T>(name: string, entries: readonly (readonly [string, T])[]): T | undefined {
  let best: { length: number; value: T } | undefined;
  for (const [prefix, value] of entries) {
    if (name.startsWith(prefix) && (best === undefined || prefix.length > best.length)) {
      best = { length: prefix.length, value };
    }
  }
  return best?.value;
}

function contextWindow(name: string): number {
  let best: { length: number; tokens: number } | undefined;
  for (const entry of CONTEXT_WINDOWS) {
    const matches = entry.exact === true ? name === entry.prefix : name.startsWith(entry.prefix);
    if (matches && (best === undefined || entry.prefix.length > best.length)) {
      best = { length: entry.prefix.length, tokens: entry.tokens };
    }
  }
  return best?.tokens ?? 0;
}

/** A JSON value narrowed to a plain object, or undefined. */
function asObject(value: unknown): Readonly<Record<string, unknown>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function withoutFinalPeriod(text: string): string {
  return text.endsWith('.') ? text.slice(0, -1) : text;
}

function typeName(type: unknown): string {
  if (typeof type === 'string') return type;
  if (Array.isArray(type))
    return type.map((t) => (typeof t === 'string' ? t : JSON.stringify(t))).join(' | ');
  return '';
}

/**
 * Raw tokens of one function definition by the cookbook formula, without `funcEnd` (counted once
 * per list, see {@link Tokenizer.toolListOverheadTokens}). The cookbook only looks at top-level
 * properties with `type`, `description` and `enum`; to stay deterministic and not undercount
 * nested schemas, anything else a property carries (`items`, `properties`, `anyOf`, …) is added
 * as the tokens of its compact JSON text. A schema that does not parse is counted as its text.
 */
function rawToolTokens(tool: ToolDescription, encoding: Encoding, raw: (text: string) => number): number {
  const f = TOOL_FORMULA[encoding];
  let tokens = f.funcInit + raw(`${tool.name}:${withoutFinalPeriod(tool.description)}`);
  if (tool.parametersJsonSchema.trim() === '') return tokens;
  let schema: unknown;
  try {
    schema = JSON.parse(tool.parametersJsonSchema);
  } catch {
    return tokens + raw(tool.parametersJsonSchema);
  }
  const properties = asObject(asObject(schema)?.['properties']);
  if (properties === undefined) return tokens;
  const keys = Object.keys(properties);
  if (keys.length === 0) return tokens;
  tokens += f.propInit;
  for (const key of keys) {
    tokens += f.propKey;
    const property = asObject(properties[key]) ?? {};
    const { type, description, enum: enumValues, ...rest } = property;
    if (Array.isArray(enumValues)) {
      tokens += f.enumInit;
      for (const item of enumValues) {
        tokens += f.enumItem + raw(typeof item === 'string' ? item : JSON.stringify(item));
      }
    }
    const desc = typeof description === 'string' ? withoutFinalPeriod(description) : '';
    tokens += raw(`${key}:${typeName(type)}:${desc}`);
    if (Object.keys(rest).length > 0) tokens += raw(JSON.stringify(rest));
  }
  return Math.max(tokens, 0);
}

/**
 * The tokenizer for a target model (see `TokenizerInfo` in the proto). Known OpenAI names are
 * counted exactly with their encoding; anything else (including '') approximately: o200k_base
 * counts × 1.10, rounded up per counted text. Counting functions are plain closures over the
 * module-level encoders of gpt-tokenizer (loaded once per process), so they are cheap to call
 * thousands of times per request.
 */
export function tokenizerFor(model: string, options: TokenizerOptions = {}): Tokenizer {
  const name = model.toLowerCase();
  const extra = Object.entries(options.extraMappings ?? {}).map(
    ([prefix, encoding]) => [prefix.toLowerCase(), encoding] as const,
  );
  const exact = longestPrefix(name, extra) ?? longestPrefix(name, BUILT_IN_PREFIXES);
  const encoding: Encoding = exact ?? 'o200k_base';
  const approximate = exact === undefined;
  const raw = RAW_COUNTERS[encoding];
  // Integer arithmetic (× 11 / 10) so that e.g. 10 tokens give exactly 11, not 12.
  const scale = approximate ? (n: number) => Math.ceil((n * 11) / 10) : (n: number) => n;
  const count = (text: string): number => scale(raw(text));

  const countMessage = (message: AssembledMessage): number => {
    let tokens = TOKENS_PER_MESSAGE + count(message.content);
    if (message.name !== '') tokens += count(message.name) + 1;
    for (const call of message.toolCalls) {
      tokens += count(call.name) + count(call.argumentsJson) + TOOL_CALL_OVERHEAD_TOKENS;
    }
    return tokens;
  };

  return {
    model,
    encoding,
    approximate,
    safetyFactor: approximate ? APPROXIMATE_SAFETY_FACTOR : 1,
    tokensPerMessage: TOKENS_PER_MESSAGE,
    replyPrimingTokens: REPLY_PRIMING_TOKENS,
    contextWindowTokens: contextWindow(name),
    toolListOverheadTokens: scale(TOOL_FORMULA[encoding].funcEnd),
    count,
    countMessage,
    countToolParameter: (tool) => scale(rawToolTokens(tool, encoding, raw)),
  };
}

/**
 * Tokens of `text` in `o200k_base` without any safety factor: the model-independent count the
 * session state stores (`summary_token_count`) and compaction budgets, as ingestion counts messages.
 */
export function countO200kTokens(text: string): number {
  return RAW_COUNTERS.o200k_base(text);
}
