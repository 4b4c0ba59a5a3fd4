/** `engram.ingestion.v1`: the ingestion service and its resources. */
export * from './gen/engram/ingestion/v1/document_pb.js';
export * from './gen/engram/ingestion/v1/ingestion_service_pb.js';
export * from './gen/engram/ingestion/v1/session_pb.js';
