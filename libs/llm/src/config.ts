import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { ConfigError, envInt, envString } from '@engram/config';
import type { Logger } from '@engram/telemetry';
import type { ChatModel, ModelCatalog, StreamingChatModel } from './chat-model.js';
import { OpenAIChatModel } from './openai-chat-model.js';

const httpUrl = envString().refine(
  (value) => value === undefined || (URL.canParse(value) && /^https?:$/u.test(new URL(value).protocol)),
  { error: 'expected an http(s) URL of an OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1' },
);

/**
 * The language-model settings, for a service's `config.ts` to spread into its schema. A model is
 * configured when both `ENGRAM_LLM_BASE_URL` and `ENGRAM_LLM_MODEL` are set; without them the
 * services use their offline paths (blueprint: no model is required to run Engram).
 */
export const llmEnvShape = {
  /** API root of an OpenAI-compatible server, e.g. `https://api.openai.com/v1`. */
  ENGRAM_LLM_BASE_URL: httpUrl,
  /** Bearer token; unset for local servers without authentication. */
  ENGRAM_LLM_API_KEY: envString(),
  /** A file holding the token (trimmed), instead of `ENGRAM_LLM_API_KEY`. */
  ENGRAM_LLM_API_KEY_FILE: envString(),
  /** The provider's chat model name. */
  ENGRAM_LLM_MODEL: envString(),
  /** Timeout of one model request, ms. */
  ENGRAM_LLM_TIMEOUT_MS: envInt(60_000, 1_000, 600_000),
  /** Retries of a failed request (connection errors, timeouts, 408/409/429/5xx). */
  ENGRAM_LLM_MAX_RETRIES: envInt(2, 0, 10),
} as const;

export type LlmEnv = z.output<z.ZodObject<typeof llmEnvShape>>;

/**
 * The configured chat model, or `undefined` when none is configured. Throws {@link ConfigError}
 * when only one of `ENGRAM_LLM_BASE_URL` and `ENGRAM_LLM_MODEL` is set (a half-configured model
 * silently disabled would be worse than failing at start), when both `ENGRAM_LLM_API_KEY` and
 * `ENGRAM_LLM_API_KEY_FILE` are set, or when the key file cannot be read.
 */
export function chatModelFromEnv(
  env: LlmEnv,
  options: { logger?: Logger } = {},
): (ChatModel & StreamingChatModel & ModelCatalog) | undefined {
  const baseURL = env.ENGRAM_LLM_BASE_URL;
  const model = env.ENGRAM_LLM_MODEL;
  if (baseURL === undefined && model === undefined) return undefined;
  if (baseURL === undefined || model === undefined) {
    const missing = baseURL === undefined ? 'ENGRAM_LLM_BASE_URL' : 'ENGRAM_LLM_MODEL';
    const present = baseURL === undefined ? 'ENGRAM_LLM_MODEL' : 'ENGRAM_LLM_BASE_URL';
    throw new ConfigError([
      { variable: missing, message: `required when ${present} is set (set both to use a model, or neither)` },
    ]);
  }
  if (env.ENGRAM_LLM_API_KEY !== undefined && env.ENGRAM_LLM_API_KEY_FILE !== undefined) {
    throw new ConfigError([
      {
        variable: 'ENGRAM_LLM_API_KEY_FILE',
        message: 'set either ENGRAM_LLM_API_KEY or ENGRAM_LLM_API_KEY_FILE, not both',
      },
    ]);
  }
  const apiKey =
    env.ENGRAM_LLM_API_KEY ??
    (env.ENGRAM_LLM_API_KEY_FILE === undefined ? undefined : readKeyFile(env.ENGRAM_LLM_API_KEY_FILE));
  return new OpenAIChatModel({
    baseURL,
    model,
    timeoutMs: env.ENGRAM_LLM_TIMEOUT_MS,
    maxRetries: env.ENGRAM_LLM_MAX_RETRIES,
    apiKey,
    logger: options.logger,
  });
}

function readKeyFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([
      {
        variable: 'ENGRAM_LLM_API_KEY_FILE',
        message: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      },
    ]);
  }
  const key = text.trim();
  if (key === '')
    throw new ConfigError([{ variable: 'ENGRAM_LLM_API_KEY_FILE', message: `${path} is empty` }]);
  return key;
}
