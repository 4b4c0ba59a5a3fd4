import { DEFAULT_PAGE_LIMITS, pageSize, parseMemoryName, parseRevisionName } from '@engram/resources';
import { errors, requirePrincipal } from '@engram/runtime';
import { MemoryRepository, viewerOf } from '@engram/store';
import type { GovernanceDeps, GovernanceImpl } from './deps.js';
import { auditReviewReads } from './lifecycle.js';
import { revisionMessage } from './revision-api.js';

/**
 * A memory's history: ListMemoryRevisions and GetMemoryRevision (whoever may see the memory now,
 * by the one rule of decision 0027; a reviewer's read is audited).
 */
export class RevisionHandlers implements Pick<GovernanceImpl, 'listMemoryRevisions' | 'getMemoryRevision'> {
  readonly #deps: GovernanceDeps;
  readonly #memories: MemoryRepository;

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
    this.#memories = new MemoryRepository(deps.store);
  }

  /** ListMemoryRevisions: the revisions of a memory the caller may see, oldest first. */
  readonly listMemoryRevisions: GovernanceImpl['listMemoryRevisions'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseMemoryName(request.parent, 'parent');
    const size = pageSize(request.pageSize, DEFAULT_PAGE_LIMITS);
    const memory = await this.#memories.getVisible(viewerOf(principal), id);
    auditReviewReads(this.#deps.logger, principal, 'ListMemoryRevisions', [memory]);
    const page = await this.#memories.listRevisions(principal.tenantId, id, {
      pageSize: size,
      pageToken: request.pageToken,
    });
    return { revisions: page.items.map(revisionMessage), nextPageToken: page.nextPageToken };
  };

  /** GetMemoryRevision: one revision of a memory the caller may see. */
  readonly getMemoryRevision: GovernanceImpl['getMemoryRevision'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const { memoryId, revisionId } = parseRevisionName(request.name);
    const memory = await this.#memories.getVisible(viewerOf(principal), memoryId);
    auditReviewReads(this.#deps.logger, principal, 'GetMemoryRevision', [memory]);
    const revision = await this.#memories.getRevision(principal.tenantId, memoryId, revisionId);
    if (revision === undefined) throw errors.notFound(request.name);
    return { revision: revisionMessage(revision) };
  };
}
