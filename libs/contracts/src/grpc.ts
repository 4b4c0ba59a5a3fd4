/** Standard gRPC and Google RPC contracts served or used by every Engram service. */
export * from './gen/grpc/health/v1/health_pb.js';
export * from './gen/grpc/reflection/v1/reflection_pb.js';
export * from './gen/google/rpc/status_pb.js';
export * from './gen/google/rpc/error_details_pb.js';
export * from './gen/google/rpc/code_pb.js';
