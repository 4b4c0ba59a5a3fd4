import { IngestionService } from '@engram/contracts/ingestion';
import { registration, type ServiceRegistration } from '@engram/runtime';
import { createEraseHandlers } from './erase.js';
import { createIngestionService, type IngestionDeps } from './ingestion-service.js';

/** The services this package mounts on a server (its own process, or the all-in-one). */
export function ingestionRoutes(deps: IngestionDeps): ServiceRegistration[] {
  return [
    registration(IngestionService, {
      ...createIngestionService(deps),
      ...createEraseHandlers({ logger: deps.logger, store: deps.store }),
    }),
  ];
}
