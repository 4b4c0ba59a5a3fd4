import type { ServiceImpl } from '@connectrpc/connect';
import type { GovernanceService } from '@engram/contracts/governance';
import type { Logger } from '@engram/runtime';

/** What the governance service is built from. Grows with the adapters (database, index, clients). */
export interface GovernanceDeps {
  readonly logger: Logger;
}

/**
 * `engram.governance.v1.GovernanceService`. Methods are added here as their issues land; a method that is
 * absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED through the runtime's error boundary,
 * never with made-up data.
 */
export function createGovernanceService(
  _deps: GovernanceDeps,
): Partial<ServiceImpl<typeof GovernanceService>> {
  return {};
}
