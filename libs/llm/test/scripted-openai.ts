/**
 * A scripted OpenAI-compatible chat-completions server for tests: real HTTP on 127.0.0.1, port 0.
 *
 * This is the one fake the project allows (ground rule: only the external LLM API may be scripted):
 * no small chat model can run here, so tests of model-backed paths script the model's answers and
 * assert on the requests it received. Everything else (HTTP, the `openai` client, JSON Schema,
 * parsing, retries) is real.
 *
 *   const server = await startScriptedOpenAI(replies({ content: '{"ok":true}' }));
 *   new OpenAIChatModel({ baseURL: server.baseURL, model: 'scripted' });
 *   server.requests[0].body.messages; await server.close();
 *
 * `POST /v1/chat/completions` answers non-streaming requests with a `chat.completion` object and
 * `stream: true` requests with server-sent `chat.completion.chunk` events ending in `[DONE]`
 * (a usage chunk last when `stream_options.include_usage` is set). A streamed reply may carry tool
 * calls (sent as `tool_calls` fragments, arguments in pieces), pause between chunks
 * (`chunkDelayMs`, so a test can cancel mid-stream) or be cut off (`cutAfterChunks`).
 * With `options.models`, `GET /v1/models` lists them (else 404, like a server without the route).
 * `server.aborted` counts replies whose connection the client closed before the reply ended;
 * `await server.settled()` first, since the close reaches the server a moment later.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the server received, in arrival order. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  /** The parsed JSON body (a body that is not JSON is answered 400 and not recorded). */
  readonly body: ChatCompletionBody;
  /** Whether the client closed the connection before the reply ended (see `settled`). */
  readonly abortedByClient: boolean;
}

/** The parts of a chat-completions request body tests look at; everything else is kept as sent. */
export interface ChatCompletionBody {
  readonly model?: string;
  readonly messages?: readonly {
    role: string;
    /** Null on an assistant message that only calls tools (typed `string` for the tests' convenience). */
    content: string;
    name?: string;
    tool_call_id?: string;
    tool_calls?: readonly { id: string; type: string; function: { name: string; arguments: string } }[];
  }[];
  readonly tools?: readonly {
    type: string;
    function: { name: string; description?: string; parameters?: Record<string, unknown> };
  }[];
  readonly response_format?: {
    type: string;
    json_schema?: { name: string; strict?: boolean; schema: Record<string, unknown> };
  };
  readonly temperature?: number;
  readonly top_p?: number;
  readonly max_tokens?: number;
  readonly max_completion_tokens?: number;
  readonly stop?: string | readonly string[];
  readonly stream?: boolean;
  readonly stream_options?: { include_usage?: boolean };
  readonly [key: string]: unknown;
}

/** A tool call the model makes; `arguments` is JSON text, streamed in pieces of 8 characters. */
export interface ScriptedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** What the model says: an assistant message. */
export interface ContentReply {
  readonly content: string;
  /** Tool calls after the content (streamed: after the content chunks). Default none. */
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Reported usage. Default: 10 prompt tokens, 5 completion tokens. */
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  /** Default `tool_calls` when there are tool calls, else `stop`. */
  readonly finishReason?: 'stop' | 'length' | 'content_filter' | 'tool_calls';
  /** For `stream: true`: the content's pieces, one chunk each. Default: pieces of 8 characters. */
  readonly chunks?: readonly string[];
  /** Wait this long before answering (the client's timeout can fire meanwhile). */
  readonly delayMs?: number;
  /** For `stream: true`: wait this long before each chunk after the first. Default 0. */
  readonly chunkDelayMs?: number;
  /**
   * For `stream: true`: drop the connection after this many content chunks, with no finish
   * reason and no `[DONE]` (an upstream that dies mid-reply).
   */
  readonly cutAfterChunks?: number;
}

/** An HTTP error answer with an OpenAI-style error body. */
export interface ErrorReply {
  readonly status: number;
  readonly message?: string;
  /** The error body's `code`, e.g. `context_length_exceeded`. Default null. */
  readonly code?: string;
  /** The error body's `param`, e.g. `temperature`. Default null. */
  readonly param?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly delayMs?: number;
}

/** Drop the connection without an answer (a crashed or unreachable upstream). */
export interface DropReply {
  readonly drop: true;
}

export type ScriptedReply = ContentReply | ErrorReply | DropReply;

/** Decides the reply to each request; `index` counts requests from 0. */
export type Script = (request: RecordedRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface ScriptedOpenAI {
  /** The API root to give the client, e.g. `http://127.0.0.1:40123/v1`. */
  readonly baseURL: string;
  /** Every request received so far. */
  readonly requests: readonly RecordedRequest[];
  /** Replies whose connection the client closed before the reply ended. */
  readonly aborted: number;
  /** Resolves when the connection of every request received so far has closed. */
  settled(): Promise<void>;
  /** Stops the server, cutting connections still waiting on a delayed reply. */
  close(): Promise<void>;
}

/**
 * A script that answers the n-th request with the n-th reply, and every request after the last
 * with an HTTP 500 saying the script ran out (so an unexpected extra call fails loudly).
 */
export function replies(...list: readonly ScriptedReply[]): Script {
  return (_request, index) =>
    list[index] ?? { status: 500, message: `scripted server: no reply for request #${index + 1}` };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

let nextId = 0;

async function sendCompletion(
  response: ServerResponse,
  body: ChatCompletionBody,
  reply: ContentReply,
): Promise<void> {
  const id = `chatcmpl-scripted-${++nextId}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model ?? 'scripted';
  const usage = {
    prompt_tokens: reply.promptTokens ?? 10,
    completion_tokens: reply.completionTokens ?? 5,
    total_tokens: (reply.promptTokens ?? 10) + (reply.completionTokens ?? 5),
  };
  const toolCalls = reply.toolCalls ?? [];
  const finishReason = reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  if (body.stream !== true) {
    sendJson(response, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.content === '' && toolCalls.length > 0 ? null : reply.content,
            refusal: null,
            ...(toolCalls.length === 0
              ? {}
              : {
                  tool_calls: toolCalls.map((call) => ({
                    id: call.id,
                    type: 'function',
                    function: { name: call.name, arguments: call.arguments },
                  })),
                }),
          },
          logprobs: null,
          finish_reason: finishReason,
        },
      ],
      usage,
    });
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (data: unknown) => response.write(`data: ${JSON.stringify(data)}\n\n`);
  const chunk = (delta: object, finish: string | null) =>
    event({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  /** False when the connection is gone (the client closed it) and nothing more should be sent. */
  const pause = async (): Promise<boolean> => {
    if (reply.chunkDelayMs !== undefined && reply.chunkDelayMs > 0)
      await waitOrClose(response, reply.chunkDelayMs);
    return !response.destroyed;
  };
  const pieces = reply.chunks ?? reply.content.match(/[\s\S]{1,8}/gu) ?? [];
  chunk({ role: 'assistant', content: '' }, null);
  let sent = 0;
  for (const piece of pieces) {
    if (!(await pause())) return;
    if (sent === reply.cutAfterChunks) {
      await cut(response);
      return;
    }
    chunk({ content: piece }, null);
    sent++;
  }
  if (sent === reply.cutAfterChunks) {
    if (await pause()) await cut(response);
    return;
  }
  for (const [index, call] of toolCalls.entries()) {
    if (!(await pause())) return;
    chunk(
      {
        content: null,
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      },
      null,
    );
    for (const piece of call.arguments.match(/[\s\S]{1,8}/gu) ?? []) {
      if (!(await pause())) return;
      chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null);
    }
  }
  if (!(await pause())) return;
  chunk({}, finishReason);
  if (body.stream_options?.include_usage === true) {
    event({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
  }
  response.end('data: [DONE]\n\n');
}

/** Drops the connection once what was written has reached the client (destroying at once could discard it). */
async function cut(response: ServerResponse): Promise<void> {
  await new Promise<void>((resolve) => {
    response.write('', () => {
      resolve();
    });
  });
  response.destroy();
}

/** Waits `ms`, or less when the connection closes meanwhile. */
function waitOrClose(response: ServerResponse, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      response.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    response.once('close', done);
  });
}

/** Options of {@link startScriptedOpenAI}. */
export interface ScriptedOpenAIOptions {
  /**
   * When set, `GET /v1/models` lists these model ids (owned by `scripted`, created at 0); when
   * unset, it answers 404 like any other unknown route (a server that does not list its models).
   */
  readonly models?: readonly string[];
}

/**
 * Starts the server on 127.0.0.1 (a free port); every chat-completions request is answered by
 * `script`.
 */
export async function startScriptedOpenAI(
  script: Script,
  options: ScriptedOpenAIOptions = {},
): Promise<ScriptedOpenAI> {
  const requests: RecordedRequest[] = [];
  const open = new Set<Promise<void>>();
  let aborted = 0;
  let closing = false;
  const server = createServer((request, response) => {
    // The server cuts a connection itself for `drop`, `cutAfterChunks` and `close()`.
    let cutByServer = false;
    const recordClose = (recorded: { abortedByClient: boolean }) => {
      const closed = new Promise<void>((resolve) => {
        const onClose = () => {
          if (!response.writableFinished && !cutByServer && !closing) {
            recorded.abortedByClient = true;
            aborted++;
          }
          open.delete(closed);
          resolve();
        };
        if (response.closed) onClose();
        else response.once('close', onClose);
      });
      open.add(closed);
    };
    void (async () => {
      const text = await readBody(request);
      const path = new URL(request.url ?? '/', 'http://localhost').pathname;
      if (request.method === 'GET' && path === '/v1/models' && options.models !== undefined) {
        sendJson(response, 200, {
          object: 'list',
          data: options.models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })),
        });
        return;
      }
      if (request.method !== 'POST' || path !== '/v1/chat/completions') {
        sendJson(response, 404, {
          error: { message: `scripted server: no route ${path}`, type: 'not_found' },
        });
        return;
      }
      let body: ChatCompletionBody;
      try {
        body = JSON.parse(text) as ChatCompletionBody;
      } catch {
        sendJson(response, 400, {
          error: { message: 'scripted server: body is not JSON', type: 'invalid_request' },
        });
        return;
      }
      const recorded = {
        method: request.method,
        path,
        headers: request.headers,
        body,
        abortedByClient: false,
      };
      requests.push(recorded);
      recordClose(recorded);
      const reply = await script(recorded, requests.length - 1);
      if ('drop' in reply) {
        cutByServer = true;
        request.socket.destroy();
        return;
      }
      if (reply.delayMs !== undefined) {
        await waitOrClose(response, reply.delayMs);
        if (response.destroyed || response.writableEnded) return;
      }
      if ('status' in reply) {
        sendJson(
          response,
          reply.status,
          {
            error: {
              message: reply.message ?? `scripted error ${reply.status}`,
              type: 'scripted',
              code: reply.code ?? null,
              param: reply.param ?? null,
            },
          },
          reply.headers,
        );
        return;
      }
      if ('content' in reply && reply.cutAfterChunks !== undefined) cutByServer = true;
      await sendCompletion(response, body, reply);
    })().catch((error: unknown) => {
      if (!response.headersSent) {
        sendJson(response, 500, { error: { message: `scripted server failed: ${String(error)}` } });
      } else {
        response.destroy();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    get aborted() {
      return aborted;
    },
    settled: async () => {
      while (open.size > 0) await Promise.all([...open]);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        closing = true;
        server.close((error) => {
          if (error === undefined) resolve();
          else reject(error);
        });
        server.closeAllConnections();
      }),
  };
}
