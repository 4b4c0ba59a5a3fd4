import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  ContextService,
  type ChatDeltaEvent,
  type ChatRequestSchema,
  type ChatResponse,
} from '@engram/contracts/context';
import type { CallOptions, Caller } from './caller.js';

/**
 * What `chat` takes: like `context.build` (`session`, `userMessage`, `budget`, …) plus
 * `generation`, `appendMode`, `requestId` (generated when absent, so a retry replays the answer).
 */
export type ChatInit = MessageInitShape<typeof ChatRequestSchema>;

/**
 * Chat (engram.context.v1): `for await (const delta of engram.chat(request))` yields the answer's
 * text fragments in order; `engram.chat.events(request)` yields every event (`context`, `delta`s,
 * `done` with the finish reason, tool calls and token usage). A call is retried only before its
 * first event arrives.
 */
export interface Chat {
  (request: ChatInit, options?: CallOptions): AsyncIterable<ChatDeltaEvent>;
  /** Every event of the stream, in order: one `context`, the `delta`s, one `done`. */
  events(request: ChatInit, options?: CallOptions): AsyncIterable<ChatResponse>;
}

/** The `chat` function of a client calling through `caller`. */
export function chatOf(caller: Caller): Chat {
  const events = (request: ChatInit, options?: CallOptions) =>
    caller.serverStream(ContextService.method.chat, request, options);
  async function* deltas(
    request: ChatInit,
    options?: CallOptions,
  ): AsyncGenerator<ChatDeltaEvent, void, undefined> {
    for await (const response of events(request, options)) {
      if (response.event.case === 'delta') yield response.event.value;
    }
  }
  return Object.assign(deltas, { events });
}
