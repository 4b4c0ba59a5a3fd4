import type { ServiceImpl } from '@connectrpc/connect';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import {
  admitted,
  peerClient,
  processAdmission,
  serviceModule,
  type ModuleContext,
  type ServiceModule,
} from '@engram/runtime';
import type { IngestionDeps } from './deps.js';
import { DocumentHandlers } from './document-handlers.js';
import { EraseHandlers } from './erase-handlers.js';
import { ExtractionHandOff } from './handoff.js';
import { MemCellHandlers } from './memcell-handlers.js';
import { MessageHandlers } from './message-handlers.js';
import type { IngestionResources } from './resources.js';
import { Segmenter } from './segmenter.js';
import { SessionHandlers } from './session-handlers.js';

type Impl = ServiceImpl<typeof IngestionService>;

/**
 * The ingestion service as a module: `engram.ingestion.v1.IngestionService` (documents,
 * sessions, messages, MemCells, erasure) and its two workers, the durable hand-off of closed
 * MemCells to governance and the segmenter (topic judge, silence sweep). The hand-off starts
 * first and stops last, so the segmenter never wakes a stopped hand-off.
 */
export function ingestionModule(
  resources: IngestionResources,
  context: ModuleContext,
): ServiceModule<typeof IngestionService> {
  const { store, settings, judge } = resources;
  const { logger } = context;
  const handOff = new ExtractionHandOff({
    store,
    governance: peerClient(context, GovernanceService),
    credentials: context.credentials,
    logger: logger.child({ component: 'extraction-handoff' }),
    settings: { maxAttempts: settings.maxExtractionAttempts },
  });
  const segmenter = new Segmenter({
    store,
    rules: settings.boundaries,
    judge,
    handOff,
    logger: logger.child({ component: 'segmenter' }),
  });
  const deps: IngestionDeps = {
    logger,
    store,
    settings,
    handOff,
    onTailGrew: (tenantId, sessionId) => {
      segmenter.tailGrew(tenantId, sessionId);
    },
  };
  // The handler classes hold their RPCs as own fields (arrow functions bound to the instance), so
  // spreading them loses nothing: a missing RPC is a compile error against the whole `Impl`.
  const service: Impl = {
    ...new DocumentHandlers(deps),
    ...new SessionHandlers(deps),
    ...new MessageHandlers(deps),
    ...new MemCellHandlers(deps),
    ...new EraseHandlers(deps),
  };
  if (resources.appendAdmission !== undefined) {
    // Per process, all callers together (decision 0033), around the per-caller admission of the
    // handler. Document ingestions are left to their per-caller limits: `wait_for_index` holds a
    // call open, idle, for as long as the indexer takes.
    const method = `${IngestionService.typeName}/${IngestionService.method.appendMessages.name}`;
    const gate = processAdmission(context.metrics, method, resources.appendAdmission);
    service.appendMessages = admitted(gate, service.appendMessages);
  }
  return serviceModule(IngestionService, service, [handOff.worker, segmenter.worker]);
}
