/**
 * The model under test against the scripted OpenAI-compatible server, shared by the specs of this
 * folder: one scripted server per test (closed after it) and `OpenAIChatModel` with short backoffs.
 */
import { OpenAIChatModel } from '../src/index.js';
import { replies, startScriptedOpenAI, type ScriptedOpenAI, type ScriptedReply } from './scripted-openai.js';

/** The scripted server of the running test: `start` starts it, `close` (in `afterEach`) closes it. */
export class ScriptedServer {
  #current: ScriptedOpenAI | undefined;

  /** Starts a server answering the n-th request with the n-th of `list`. */
  async start(...list: ScriptedReply[]): Promise<ScriptedOpenAI> {
    this.#current = await startScriptedOpenAI(replies(...list));
    return this.#current;
  }

  /** Closes the server, if one runs (a test may close it early to see a refused connection). */
  async close(): Promise<void> {
    const current = this.#current;
    this.#current = undefined;
    await current?.close();
  }
}

/** `OpenAIChatModel` on `baseURL` (model `scripted-model`, backoff 1–5 ms), with `options` applied. */
export function modelAt(
  baseURL: string,
  options: { timeoutMs?: number; maxRetries?: number; model?: string } = {},
): OpenAIChatModel {
  return new OpenAIChatModel({
    baseURL,
    apiKey: 'test-key',
    model: 'scripted-model',
    initialBackoffMs: 1,
    maxBackoffMs: 5,
    ...options,
  });
}
