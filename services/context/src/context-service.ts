import type { ServiceImpl } from '@connectrpc/connect';
import type { ContextService } from '@engram/contracts/context';
import type { Logger } from '@engram/runtime';

/** What the context service is built from. Grows with the adapters (database, index, clients). */
export interface ContextDeps {
  readonly logger: Logger;
}

/**
 * `engram.context.v1.ContextService`. Methods are added here as their issues land; a method that is
 * absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED through the runtime's error boundary,
 * never with made-up data.
 */
export function createContextService(_deps: ContextDeps): Partial<ServiceImpl<typeof ContextService>> {
  return {};
}
