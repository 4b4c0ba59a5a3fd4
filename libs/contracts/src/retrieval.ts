/** `engram.retrieval.v1`: the retrieval service and its resources. */
export * from './gen/engram/retrieval/v1/index_pb.js';
export * from './gen/engram/retrieval/v1/retrieval_service_pb.js';
export * from './gen/engram/retrieval/v1/search_pb.js';
