/**
 * Rule `denied_namespace`: FACTs in a namespace the tenant refuses (`deniedNamespaces`: exact
 * names, or prefixes ending in `*`) are rejected. Other types have no namespace and pass.
 */
import type { HardRule } from './types.js';

/** The entry of `denied` that covers `namespace`, if any. */
export function deniedBy(namespace: string, denied: readonly string[]): string | undefined {
  return denied.find((entry) =>
    entry.endsWith('*') ? namespace.startsWith(entry.slice(0, -1)) : namespace === entry,
  );
}

export const deniedNamespaceRule: HardRule = {
  name: 'denied_namespace',
  evaluate(candidate, ctx) {
    if (candidate.type !== 'FACT' || candidate.namespace === undefined) return { verdict: 'PASSED' };
    const entry = deniedBy(candidate.namespace, ctx.policy.deniedNamespaces);
    if (entry === undefined) return { verdict: 'PASSED' };
    return {
      verdict: 'REJECTED',
      field: 'namespace',
      note: `namespace ${candidate.namespace} is denied by the policy (${entry})`,
    };
  },
};
