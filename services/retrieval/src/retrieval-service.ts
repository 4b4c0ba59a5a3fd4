import type { ServiceImpl } from '@connectrpc/connect';
import type { RetrievalService } from '@engram/contracts/retrieval';
import type { Logger } from '@engram/runtime';

/** What the retrieval service is built from. Grows with the adapters (database, index, clients). */
export interface RetrievalDeps {
  readonly logger: Logger;
}

/**
 * `engram.retrieval.v1.RetrievalService`. Methods are added here as their issues land; a method that is
 * absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED through the runtime's error boundary,
 * never with made-up data.
 */
export function createRetrievalService(_deps: RetrievalDeps): Partial<ServiceImpl<typeof RetrievalService>> {
  return {};
}
