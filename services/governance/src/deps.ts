import type { Client, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { GovernanceService } from '@engram/contracts/governance';
import type { IngestionService } from '@engram/contracts/ingestion';
import { errors, type Logger, type Principal } from '@engram/runtime';
import type { Store } from '@engram/store';
import type { GovernancePolicy } from './domain/rules/policy.js';
import type { ExtractionRunner } from './extraction.js';

/** The complete implementation of `engram.governance.v1.GovernanceService`. */
export type GovernanceImpl = ServiceImpl<typeof GovernanceService>;

/** What the governance handlers are built from (assembled by `governanceModule`). */
export interface GovernanceDeps {
  readonly logger: Logger;
  readonly store: Store;
  /** The hard rules' policy of a tenant. */
  readonly policies: (tenantId: string) => GovernancePolicy;
  /** Ingestion, for reading MemCells (the caller's credential is forwarded). */
  readonly ingestion: Client<typeof IngestionService>;
  /** Runs extraction jobs; the module stops it at shutdown. */
  readonly runner: ExtractionRunner;
  /** Completes forget receipts: told when ForgetUser recorded one, so the erasure goes on at once. */
  readonly forgetWorker: { wake(): void };
  /** The most bytes one ImportUser stream may carry. */
  readonly importMaxBytes: number;
  /** Whether a tenant's imported text is redacted (decision 0029's setting). */
  readonly redactSecrets: (tenantId: string) => boolean;
}

const ADMIN_ROLE = 'admin';

/** Whether the caller is an administrator. */
export const isAdmin = (p: Principal) => p.roles.includes(ADMIN_ROLE);

/** Whether the caller sees every owner's records of the tenant (a service or an administrator). */
export const privileged = (p: Principal) => p.roles.includes('service') || isAdmin(p);

/** PERMISSION_DENIED `ROLE_REQUIRED` unless the caller is an administrator. */
export function requireAdmin(principal: Principal, method: string): void {
  if (!isAdmin(principal)) {
    throw errors.permissionDenied('ROLE_REQUIRED', `${method} requires the ${ADMIN_ROLE} role`, {
      role: ADMIN_ROLE,
    });
  }
}

/** Resolves when `work` does, or rejects with the call's cancellation (the work goes on). */
export function untilCancelled<T>(work: Promise<T>, ctx: HandlerContext): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(ctx.signal.reason as Error);
    };
    if (ctx.signal.aborted) {
      onAbort();
      return;
    }
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => {
      ctx.signal.removeEventListener('abort', onAbort);
    });
  });
}
