import type { ServiceImpl } from '@connectrpc/connect';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { mcpHttpHandler, openAiProxyHandler } from '@engram/gateway';
import {
  admitted,
  peerClient,
  type HttpRoute,
  processAdmission,
  serviceModule,
  type ModuleContext,
  type ServiceModule,
} from '@engram/runtime';
import { SessionStateRepository } from '@engram/store';
import { BackgroundWork } from './background-work.js';
import { BuildContextHandlers } from './build-context-handlers.js';
import { ChatHandlers } from './chat-handlers.js';
import { CompactionHandlers } from './compaction-handlers.js';
import { Compactions } from './compactions.js';
import type { ContextDeps } from './deps.js';
import { EraseHandlers } from './erase-handlers.js';
import { listChatModels } from './models.js';
import type { ContextResources } from './resources.js';
import { SessionLocks } from './session-locks.js';
import { SessionStateHandlers } from './state-handlers.js';

type Impl = ServiceImpl<typeof ContextService>;

/**
 * `engram.context.v1.ContextService` over its resources, calling ingestion, governance and
 * retrieval through the context's transport. It has no workers; its `stop` waits for the work
 * calls left running (re-sent compaction marks, Chat's automatic compactions), which still use the
 * peers and the database.
 */
export function contextModule(
  resources: ContextResources,
  context: ModuleContext,
): ServiceModule<typeof ContextService> {
  const background = new BackgroundWork();
  const deps: ContextDeps = {
    logger: context.logger,
    store: resources.store,
    states: new SessionStateRepository(resources.store),
    ingestion: peerClient(context, IngestionService),
    governance: peerClient(context, GovernanceService),
    retrieval: peerClient(context, RetrievalService),
    credentials: context.credentials,
    settings: resources.settings,
    ...(resources.chatModel !== undefined ? { chatModel: resources.chatModel } : {}),
    locks: new SessionLocks(),
    background,
  };
  const compactions = new Compactions(deps, resources.embedder);
  const service: Impl = {
    ...new BuildContextHandlers(deps),
    ...new ChatHandlers(deps, compactions),
    ...new CompactionHandlers(deps, compactions),
    ...new SessionStateHandlers(deps),
    ...new EraseHandlers(deps),
  };
  if (resources.buildContextAdmission !== undefined) {
    // Per process, around the whole assembly (decision 0033). Chat is left out: it holds its call
    // for the model's whole answer, which the model endpoint bounds.
    const method = `${ContextService.typeName}/${ContextService.method.buildContext.name}`;
    const gate = processAdmission(context.metrics, method, resources.buildContextAdmission);
    service.buildContext = admitted(gate, service.buildContext);
  }
  return {
    ...serviceModule(ContextService, service, [], () => background.settled()),
    httpRoutes: gatewayRoutes(resources, context),
  };
}

/**
 * The gateway's HTTP routes, served beside the RPCs (decision 0035): the OpenAI-compatible proxy
 * over `Chat` and MCP's Streamable HTTP endpoint. Both are adapters: every operation is an RPC of
 * the four services made with the caller's own credential, through this module's transport
 * (in-process in the all-in-one; the peers, and this process for ContextService, otherwise).
 */
function gatewayRoutes(resources: ContextResources, context: ModuleContext): HttpRoute[] {
  return [
    {
      prefix: '/v1/',
      handle: openAiProxyHandler({
        transportFor: context.transport,
        listModels: listChatModels(resources),
        logger: context.logger.child({ component: 'openai-proxy' }),
      }),
    },
    {
      prefix: '/mcp',
      handle: mcpHttpHandler({
        transportFor: context.transport,
        logger: context.logger.child({ component: 'mcp' }),
      }),
    },
  ];
}
