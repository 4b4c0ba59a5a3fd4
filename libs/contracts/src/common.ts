/** Shared Engram vocabulary: `engram.common.v1`. */
export * from './gen/engram/common/v1/error_reason_pb.js';
export * from './gen/engram/common/v1/item_kind_pb.js';
export * from './gen/engram/common/v1/scope_pb.js';
export * from './gen/engram/common/v1/time_range_pb.js';
export * from './gen/engram/common/v1/tool_call_pb.js';
export * from './gen/engram/common/v1/token_usage_pb.js';
