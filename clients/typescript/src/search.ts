import type { MessageInitShape } from '@bufbuild/protobuf';
import { RetrievalService, type SearchRequestSchema, type SearchResponse } from '@engram/contracts/retrieval';
import type { CallOptions, Caller } from './caller.js';

/** What `search` takes: the `query`, and optionally `topK`, `filter`, `options`, `explain`, `allowDegraded`. */
export type SearchInit = MessageInitShape<typeof SearchRequestSchema>;

/** Hybrid search over the memories and document chunks visible to the caller (engram.retrieval.v1). */
export type Search = (request: SearchInit, options?: CallOptions) => Promise<SearchResponse>;

/** The `search` function of a client calling through `caller`. */
export function searchOf(caller: Caller): Search {
  return (request, options) => caller.unary(RetrievalService.method.search, request, options);
}
