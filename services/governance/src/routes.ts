import { GovernanceService } from '@engram/contracts/governance';
import { registration, type ServiceRegistration } from '@engram/runtime';
import { createForgetHandlers } from './forget.js';
import { createGovernanceService, type GovernanceDeps } from './governance-service.js';

/** The services this package mounts on a server (its own process, or the all-in-one). */
export function governanceRoutes(deps: GovernanceDeps): ServiceRegistration[] {
  return [
    registration(GovernanceService, {
      ...createGovernanceService(deps),
      ...createForgetHandlers({
        logger: deps.logger,
        store: deps.store,
        ...(deps.forgetWorker !== undefined ? { worker: deps.forgetWorker } : {}),
      }),
    }),
  ];
}
