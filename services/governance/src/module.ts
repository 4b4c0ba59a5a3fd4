import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { peerClient, serviceModule, type ModuleContext, type ServiceModule } from '@engram/runtime';
import type { GovernanceDeps, GovernanceImpl } from './deps.js';
import { ExpirySweeper } from './expiry.js';
import { ExtractionJobHandlers } from './extraction-job-handlers.js';
import { ExtractionRunner } from './extraction.js';
import { chooseExtractor } from './extractors.js';
import { ForgetHandlers } from './forget-handlers.js';
import { ForgetWorker } from './forget.js';
import { MemoryHandlers } from './memory-handlers.js';
import { MemoryLifecycleHandlers } from './memory-lifecycle-handlers.js';
import { registerGovernanceMetrics } from './metrics.js';
import { PolicyHandlers } from './policy-handlers.js';
import { PortabilityHandlers } from './portability-handlers.js';
import type { GovernanceResources } from './resources.js';
import { RevisionHandlers } from './revision-handlers.js';

/**
 * The governance package as a process mounts it: the whole `GovernanceService`, the expiry sweep
 * and the forget worker (ingestion and context reached through `context`), and, at shutdown, the
 * extraction jobs in flight awaited.
 */
export function governanceModule(
  resources: GovernanceResources,
  context: ModuleContext,
): ServiceModule<typeof GovernanceService> {
  const { logger } = context;
  const { store, policies } = resources;
  const ingestion = peerClient(context, IngestionService);
  registerGovernanceMetrics(context.metrics, store);
  const runner = new ExtractionRunner({
    store,
    logger: logger.child({ component: 'extraction' }),
    ingestion,
    policies,
    ...chooseExtractor(resources.chatModel),
  });
  // Completes forget receipts: context and ingestion EraseSubject, then the index.
  const forget = new ForgetWorker({
    store,
    logger: logger.child({ component: 'forget' }),
    ingestion,
    context: peerClient(context, ContextService),
    credentials: context.credentials,
  });
  const expiry = new ExpirySweeper({ store, logger: logger.child({ component: 'expiry' }) });
  const deps: GovernanceDeps = {
    logger,
    store,
    policies,
    ingestion,
    runner,
    forgetWorker: forget.worker,
    importMaxBytes: resources.importMaxBytes,
    redactSecrets: resources.redactSecrets,
  };
  // The handler classes hold their RPCs as own fields (arrow functions bound to the instance), so
  // spreading them loses nothing: a missing RPC is a compile error against the whole `GovernanceImpl`.
  const service: GovernanceImpl = {
    ...new MemoryHandlers(deps),
    ...new MemoryLifecycleHandlers(deps),
    ...new RevisionHandlers(deps),
    ...new ExtractionJobHandlers(deps),
    ...new ForgetHandlers(deps),
    ...new PolicyHandlers(deps),
    ...new PortabilityHandlers(deps),
  };
  return serviceModule(GovernanceService, service, [expiry.worker, forget.worker], () => runner.stop());
}
