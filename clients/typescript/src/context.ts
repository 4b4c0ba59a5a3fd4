import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  ContextService,
  type BuildContextRequestSchema,
  type BuildContextResponse,
  type SessionState,
} from '@engram/contracts/context';
import type { CallOptions, Caller } from './caller.js';
import { answered } from './errors.js';

/**
 * What `context.build` takes: the `session`, the `userMessage`, the `budget` (`totalTokens`), and
 * optionally `model`, `systemPrompt`, `tools`, `knowledge`, `compaction`, `includeTrace`, …
 */
export type BuildContextInit = MessageInitShape<typeof BuildContextRequestSchema>;

/** Context assembly (engram.context.v1): the prompt for the next model call, within a token budget. */
export class Context {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /** Assembles the messages to send to a model for the session's next turn. */
  build(request: BuildContextInit, options?: CallOptions): Promise<BuildContextResponse> {
    return this.#caller.unary(ContextService.method.buildContext, request, options);
  }

  /** The working state of `session` (`sessions/{id}`): its summary, open loops and version. */
  async state(session: string, options?: CallOptions): Promise<SessionState> {
    const response = await this.#caller.unary(
      ContextService.method.getSessionState,
      { name: `${session}/state` },
      options,
    );
    return answered(response.sessionState, 'session state');
  }
}
