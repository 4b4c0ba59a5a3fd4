import type { ServiceImpl } from '@connectrpc/connect';
import type { IngestionService } from '@engram/contracts/ingestion';
import type { Logger } from '@engram/runtime';

/** What the ingestion service is built from. Grows with the adapters (database, index, clients). */
export interface IngestionDeps {
  readonly logger: Logger;
}

/**
 * `engram.ingestion.v1.IngestionService`. Methods are added here as their issues land; a method that is
 * absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED through the runtime's error boundary,
 * never with made-up data.
 */
export function createIngestionService(_deps: IngestionDeps): Partial<ServiceImpl<typeof IngestionService>> {
  return {};
}
