import type { DescService } from '@bufbuild/protobuf';
import type { Transport } from '@connectrpc/connect';
import { createLogger, moduleContext, serve, type ServeOptions } from '@engram/runtime';
import type { RetrievalConfig } from './config.js';
import { retrievalModule } from './module.js';
import { openRetrievalResources } from './resources.js';

/** Retrieval calls no other service: asking for a peer is a programming error. */
function noPeers(service: DescService): Transport {
  throw new Error(`retrieval has no peers: it cannot call ${service.typeName}`);
}

/** Starts the retrieval service as its own process (no I/O at import). */
export async function createRetrievalServer(
  config: RetrievalConfig,
  options: Pick<ServeOptions, 'handleSignals' | 'logDestination'> = {},
) {
  const resources = await openRetrievalResources(
    config,
    createLogger({ service: 'retrieval', level: config.ENGRAM_LOG_LEVEL }),
  );
  return serve({
    name: 'retrieval',
    env: config,
    port: config.ENGRAM_PORT,
    modules: (logger, serving) => [retrievalModule(resources, moduleContext(logger, serving, noPeers))],
    onShutdown: () => resources.close(),
    ...options,
  });
}
