import type { ServiceImpl } from '@connectrpc/connect';
import type { ContextService } from '@engram/contracts/context';
import { buildContext } from './build-context.js';
import type { ContextDeps } from './deps.js';

type Impl = ServiceImpl<typeof ContextService>;

/** Context assembly: `BuildContext`. */
export class BuildContextHandlers implements Pick<Impl, 'buildContext'> {
  readonly #deps: ContextDeps;

  constructor(deps: ContextDeps) {
    this.#deps = deps;
  }

  /** BuildContext: the layered context of one turn, counted with the target model's tokenizer. */
  readonly buildContext: Impl['buildContext'] = async (request, ctx) =>
    (await buildContext(this.#deps, request, ctx, this.#deps.chatModel?.model)).response;
}
