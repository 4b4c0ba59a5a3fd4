import { RetrievalService } from '@engram/contracts/retrieval';
import { registration, type ServiceRegistration } from '@engram/runtime';
import { createRetrievalService, type RetrievalDeps } from './retrieval-service.js';

/** The services this package mounts on a server (its own process, or the all-in-one). */
export function retrievalRoutes(deps: RetrievalDeps): ServiceRegistration[] {
  return [registration(RetrievalService, createRetrievalService(deps))];
}
