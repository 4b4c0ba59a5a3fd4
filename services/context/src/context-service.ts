import type { ServiceImpl } from '@connectrpc/connect';
import type { ContextService } from '@engram/contracts/context';
import type { Logger } from '@engram/runtime';
import type { Store } from '@engram/store';
import { createEraseHandlers } from './erase.js';

/** What the context service is built from. Grows with the adapters (database, index, clients). */
export interface ContextDeps {
  readonly logger: Logger;
  readonly store?: Store;
}

/**
 * `engram.context.v1.ContextService`. Methods are added here as their issues land; a method that is
 * absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED through the runtime's error boundary,
 * never with made-up data.
 */
export function createContextService(deps: ContextDeps): Partial<ServiceImpl<typeof ContextService>> {
  return deps.store === undefined ? {} : createEraseHandlers({ logger: deps.logger, store: deps.store });
}
