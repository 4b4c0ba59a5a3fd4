import type { DescMethod } from '@bufbuild/protobuf';
import { errors } from '@engram/errors';

/** The page size a List call asked for: 0 is `fallback`, above `max` is `max`, negative is FIELD_INVALID. */
export function pageSize(
  requested: number,
  limits: { readonly fallback: number; readonly max: number },
): number {
  if (requested < 0) throw errors.fieldInvalid('page_size', 'must not be negative');
  return requested === 0 ? limits.fallback : Math.min(requested, limits.max);
}

/** The page sizes of most List calls (documented in the protos): 50 by default, at most 500. */
export const DEFAULT_PAGE_LIMITS = { fallback: 50, max: 500 } as const;

/**
 * A method's full name, `package.Service/Method`, from its descriptor: the key of request-id
 * replays and the label of RPC metrics (`GovernanceService.method.createMemory` →
 * `engram.governance.v1.GovernanceService/CreateMemory`).
 */
export function methodKey(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}
