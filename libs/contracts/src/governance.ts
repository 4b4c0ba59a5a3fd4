/** `engram.governance.v1`: the governance service and its resources. */
export * from './gen/engram/governance/v1/governance_service_pb.js';
export * from './gen/engram/governance/v1/memory_pb.js';
export * from './gen/engram/governance/v1/policy_pb.js';
