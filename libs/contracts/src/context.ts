/** `engram.context.v1`: the context service and its resources. */
export * from './gen/engram/context/v1/context_pb.js';
export * from './gen/engram/context/v1/context_service_pb.js';
