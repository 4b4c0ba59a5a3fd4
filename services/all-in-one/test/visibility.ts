/**
 * The visibility model of the randomized isolation suites (isolation.int.spec.ts and
 * isolation-scale.int.spec.ts): who may see an item, the shared bilingual vocabulary that makes
 * every query hit many owners, and call options per principal.
 */
import { ItemKind, Scope } from '@engram/contracts/common';
import type { Role } from '@engram/runtime';
import type { Choices } from '@engram/testing';
import type { TokenCache } from './harness.js';

/** A small shared vocabulary (English, Chinese), so that every query hits many items of many owners. */
export const VOCABULARY = [
  ['green tea', '绿茶'],
  ['coffee', '咖啡'],
  ['violin', '小提琴'],
  ['garden', '花园'],
  ['budget', '预算'],
  ['product launch', '产品发布'],
  ['river', '河流'],
  ['winter trip', '冬天旅行'],
  ['dumplings', '饺子'],
  ['weekly meeting', '周会'],
] as const;

/** A caller as the model sees it (the claims of its token). */
export interface Principal {
  readonly tenant: string;
  readonly subject: string;
  readonly orgs: readonly string[];
  readonly roles: readonly Role[];
}

/** Where an item lives: what visibility depends on. */
export interface Placed {
  readonly tenant: string;
  readonly owner: string;
  readonly scope: Scope;
  readonly orgId: string;
}

/** SELF = the owner; ORG = a member of the org; PLATFORM = the `platform` role; never another tenant. */
export function visible(item: Placed, p: Principal): boolean {
  if (item.tenant !== p.tenant) return false;
  switch (item.scope) {
    case Scope.SELF:
      return item.owner === p.subject;
    case Scope.ORG:
      return p.orgs.includes(item.orgId);
    case Scope.PLATFORM:
      return p.roles.includes('platform');
    default:
      return false;
  }
}

/** The filter of a Search request. */
export interface SearchFilter {
  kinds?: ItemKind[];
  scopes?: Scope[];
  orgIds?: string[];
}

/** A random Search filter for `p`: sometimes kinds, sometimes scopes (PLATFORM only with the role), sometimes orgs of its own. */
export function randomFilter({ chance, subset }: Choices, p: Principal): SearchFilter {
  const filter: SearchFilter = {};
  if (chance(0.3)) {
    const kinds = subset([ItemKind.MEMORY, ItemKind.CHUNK, ItemKind.ROUND]);
    if (kinds.length > 0) filter.kinds = kinds;
  }
  if (chance(0.3)) {
    const scopes = subset([Scope.SELF, Scope.ORG, ...(p.roles.includes('platform') ? [Scope.PLATFORM] : [])]);
    if (scopes.length > 0) filter.scopes = scopes;
  }
  if (p.orgs.length > 0 && chance(0.25)) {
    const orgIds = subset(p.orgs);
    if (orgIds.length > 0) filter.orgIds = orgIds;
  }
  return filter;
}

/** `tenant/subject orgs=[…] roles=[…]`, for failure messages. */
export const describePrincipal = (p: Principal) =>
  `${p.tenant}/${p.subject} orgs=[${p.orgs.join(',')}] roles=[${p.roles.join(',')}]`;

/** Call options for `p`, with a token from `tokens` (minted once per principal). */
export async function callOptionsOf(tokens: TokenCache, p: Principal) {
  return {
    headers: await tokens.headers({ subject: p.subject, tenantId: p.tenant, orgIds: p.orgs, roles: p.roles }),
  };
}
