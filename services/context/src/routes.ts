import { ContextService } from '@engram/contracts/context';
import { registration, type ServiceRegistration } from '@engram/runtime';
import { createContextService, type ContextDeps } from './context-service.js';

/** The services this package mounts on a server (its own process, or the all-in-one). */
export function contextRoutes(deps: ContextDeps): ServiceRegistration[] {
  return [registration(ContextService, createContextService(deps))];
}
