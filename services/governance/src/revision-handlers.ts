import { DEFAULT_PAGE_LIMITS, pageSize, parseMemoryName } from '@engram/resources';
import { errors, requirePrincipal } from '@engram/runtime';
import { MemoryRepository, viewerOf } from '@engram/store';
import type { GovernanceDeps, GovernanceImpl } from './deps.js';
import { parseRevisionName, revisionMessage } from './revision-api.js';

/** A memory's history: ListMemoryRevisions and GetMemoryRevision (whoever may see the memory). */
export class RevisionHandlers implements Pick<GovernanceImpl, 'listMemoryRevisions' | 'getMemoryRevision'> {
  readonly #memories: MemoryRepository;

  constructor(deps: GovernanceDeps) {
    this.#memories = new MemoryRepository(deps.store);
  }

  /** ListMemoryRevisions: the revisions of a memory the caller may see, oldest first. */
  readonly listMemoryRevisions: GovernanceImpl['listMemoryRevisions'] = async (request, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const id = parseMemoryName(request.parent, 'parent');
    const size = pageSize(request.pageSize, DEFAULT_PAGE_LIMITS);
    await this.#memories.getVisible(viewerOf(principal), id);
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
    await this.#memories.getVisible(viewerOf(principal), memoryId);
    const revision = await this.#memories.getRevision(principal.tenantId, memoryId, revisionId);
    if (revision === undefined) throw errors.notFound(request.name);
    return { revision: revisionMessage(revision) };
  };
}
