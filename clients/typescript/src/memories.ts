import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  GovernanceService,
  type CreateMemoryRequestSchema,
  type CreateMemoryResponse,
  type DeleteMemoryRequestSchema,
  type DeleteMemoryResponse,
  type ListMemoriesRequestSchema,
  type Memory,
  type UpdateMemoryRequestSchema,
  type UpdateMemoryResponse,
} from '@engram/contracts/governance';
import type { CallOptions, Caller, FieldsOf } from './caller.js';
import { answered } from './errors.js';
import { Paginated } from './pagination.js';

/** What `memories.create` takes: the memory, and optionally `requestId` and `validateOnly`. */
export type CreateMemoryInit = MessageInitShape<typeof CreateMemoryRequestSchema>;
/** What `memories.list` takes: filters, order and page size (the iterator sets the token). */
export type ListMemoriesInit = Omit<FieldsOf<typeof ListMemoriesRequestSchema>, 'pageToken'>;
/** What `memories.update` takes: the memory with its `name`, the `updateMask` and the `etag`. */
export type UpdateMemoryInit = MessageInitShape<typeof UpdateMemoryRequestSchema>;
/** What `memories.delete` takes besides the name: `etag`, `reason`, `purge`. */
export type DeleteMemoryOptions = Omit<FieldsOf<typeof DeleteMemoryRequestSchema>, 'name'>;

/** Memories (engram.governance.v1): write, read, list, update and delete them. */
export class Memories {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /** Writes one memory through the governance rules; the answer has the memory and the decision. */
  create(request: CreateMemoryInit, options?: CallOptions): Promise<CreateMemoryResponse> {
    return this.#caller.unary(GovernanceService.method.createMemory, request, options);
  }

  /** One memory visible to the caller, by name (`memories/{id}`). */
  async get(name: string, options?: CallOptions): Promise<Memory> {
    const response = await this.#caller.unary(GovernanceService.method.getMemory, { name }, options);
    return answered(response.memory, 'memory');
  }

  /** The memories visible to the caller, narrowed by `request`'s filters, page by page. */
  list(request: ListMemoriesInit = {}, options?: CallOptions): Paginated<Memory> {
    return new Paginated(async (pageToken) => {
      const response = await this.#caller.unary(
        GovernanceService.method.listMemories,
        { ...request, pageToken },
        options,
      );
      return { items: response.memories, nextPageToken: response.nextPageToken };
    });
  }

  /** Changes the fields named in `updateMask`. */
  update(request: UpdateMemoryInit, options?: CallOptions): Promise<UpdateMemoryResponse> {
    return this.#caller.unary(GovernanceService.method.updateMemory, request, options);
  }

  /** Deletes a memory (soft unless `purge`). */
  delete(
    name: string,
    request: DeleteMemoryOptions = {},
    options?: CallOptions,
  ): Promise<DeleteMemoryResponse> {
    return this.#caller.unary(GovernanceService.method.deleteMemory, { ...request, name }, options);
  }
}
