import type { Expression, ExpressionBuilder, RawBuilder, SqlBool } from 'kysely';
import type { Database } from './schema.js';

/** Who may see a row: its owner (SELF), the members of its org (ORG), or the platform (PLATFORM). */
export type Scope = 'SELF' | 'ORG' | 'PLATFORM';

/** Who is looking: visibility is computed from the verified principal, never from request fields. */
export interface Viewer {
  readonly tenantId: string;
  readonly subject: string;
  readonly orgIds: readonly string[];
  /** Holds the `platform` role. */
  readonly platform: boolean;
  /**
   * Reviews the tenant's quarantined memories (the `admin` role): sees every QUARANTINED memory
   * of the tenant, whatever its owner and scope ({@link memoryVisibleTo} in memories.ts).
   */
  readonly reviewer?: boolean;
}

/** The viewer of a verified principal (its `roles` decide `platform` and `reviewer`). */
export function viewerOf(principal: {
  readonly tenantId: string;
  readonly subject: string;
  readonly orgIds: readonly string[];
  readonly roles: readonly string[];
}): Viewer {
  return {
    tenantId: principal.tenantId,
    subject: principal.subject,
    orgIds: principal.orgIds,
    platform: principal.roles.includes('platform'),
    reviewer: principal.roles.includes('admin'),
  };
}

/** The tenant column of a scope rule: itself, or an expression of it (`filterOnly`). */
export type TenantColumn = 'tenant_id' | RawBuilder<unknown>;

/** The columns the scope rule reads. */
interface ScopedColumns {
  tenant_id: string;
  owner_id: string;
  org_id: string;
  scope: string;
}

/** Tables whose rows carry their own scope (memories, documents). */
export type ScopedTable = {
  [T in keyof Database]: Database[T] extends ScopedColumns ? T : never;
}[keyof Database];

/**
 * The SQL condition "visible to `viewer`" (blueprint §1 scopes), always within the tenant: SELF
 * rows to their owner, ORG rows to the members of their org, PLATFORM rows to the `platform` role.
 * `tenant` is how the tenant column is written: the column, or `filterOnly` of it in a read by
 * primary key (dialect.ts).
 */
export function visibleTo<T extends ScopedTable>(
  viewer: Viewer,
  tenant: TenantColumn = 'tenant_id',
): (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool> {
  return (eb) => {
    // Narrowed once here: every scoped table has these columns, which a generic `T` cannot show.
    const on = eb as unknown as ExpressionBuilder<Record<'scoped', ScopedColumns>, 'scoped'>;
    return on.and([
      on(tenant, '=', viewer.tenantId),
      on.or([
        on.and([on('scope', '=', 'SELF'), on('owner_id', '=', viewer.subject)]),
        ...(viewer.orgIds.length > 0
          ? [on.and([on('scope', '=', 'ORG'), on('org_id', 'in', [...viewer.orgIds])])]
          : []),
        ...(viewer.platform ? [on('scope', '=', 'PLATFORM')] : []),
      ]),
    ]);
  };
}
