import { ContextService } from './gen/engram/context/v1/context_service_pb.js';
import { GovernanceService } from './gen/engram/governance/v1/governance_service_pb.js';
import { IngestionService } from './gen/engram/ingestion/v1/ingestion_service_pb.js';
import { RetrievalService } from './gen/engram/retrieval/v1/retrieval_service_pb.js';

/** The four Engram services, in the order of the blueprint (§2). */
export const engramServices = [
  GovernanceService,
  IngestionService,
  RetrievalService,
  ContextService,
] as const;
