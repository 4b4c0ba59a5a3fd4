import { errors, requirePrincipal } from '@engram/runtime';
import { requireAdmin, type GovernanceDeps, type GovernanceImpl } from './deps.js';
import { policyMessage } from './policy-api.js';

/** The effective policy: GetPolicy (administrators). */
export class PolicyHandlers implements Pick<GovernanceImpl, 'getPolicy'> {
  readonly #deps: GovernanceDeps;
  /** When the policies were loaded: the policy's `update_time`. */
  readonly #loadedAt = Date.now();

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
  }

  /** GetPolicy: the caller's tenant's policy, as the hard rules apply it. */
  readonly getPolicy: GovernanceImpl['getPolicy'] = (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    if (request.name !== '' && request.name !== 'policy') {
      throw errors.invalidArgument('NAME_INVALID', 'name must be policy', {
        field: 'name',
        pattern: 'policy',
      });
    }
    requireAdmin(principal, 'GetPolicy');
    return { policy: policyMessage(this.#deps.policies(principal.tenantId), this.#loadedAt) };
  };
}
