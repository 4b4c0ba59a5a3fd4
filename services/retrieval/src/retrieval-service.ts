import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { IndexBackend, type RetrievalService } from '@engram/contracts/retrieval';
import type { Embedder } from '@engram/embeddings';
import { requirePrincipal, requireRole, type Logger } from '@engram/runtime';
import type { Store } from '@engram/store';
import { indexStatus } from './domain/index-status.js';
import type { LiveIndex } from './indexer/collections.js';

/** What the retrieval service is built from. */
export interface RetrievalDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly embedder: Embedder;
  readonly live: LiveIndex;
}

/**
 * `engram.retrieval.v1.RetrievalService`. Methods are added here as their issues land; a method
 * that is absent answers UNIMPLEMENTED with reason NOT_IMPLEMENTED, never with made-up data.
 */
export function createRetrievalService(deps: RetrievalDeps): Partial<ServiceImpl<typeof RetrievalService>> {
  return {
    async getIndexStatus(_request, context) {
      const principal = requirePrincipal(context.values);
      requireRole(principal, 'admin');
      const report = await indexStatus(
        {
          store: deps.store,
          index: deps.live.index,
          collection: deps.live.collection,
          embedder: deps.embedder,
          stale: deps.live.stale,
        },
        principal.tenantId,
      );
      const durationOf = (ms: number) => ({
        seconds: BigInt(Math.floor(ms / 1000)),
        nanos: (ms % 1000) * 1_000_000,
      });
      return {
        indexStatus: {
          name: 'indexStatus',
          backend: report.backend === 'QDRANT' ? IndexBackend.QDRANT : IndexBackend.EMBEDDED,
          collection: report.collection,
          embeddingModel: report.embeddingModel,
          embeddingDimensions: report.embeddingDimensions,
          indexReachable: report.indexReachable,
          embeddingAvailable: report.embeddingAvailable,
          kinds: report.kinds.map((k) => ({
            kind: ItemKind[k.kind],
            sourceRows: BigInt(k.sourceRows),
            ...(k.indexedPoints === undefined ? {} : { indexedPoints: BigInt(k.indexedPoints) }),
            ...(k.drift === undefined ? {} : { drift: BigInt(k.drift) }),
          })),
          outboxPending: BigInt(report.outboxPending),
          outboxRetrying: BigInt(report.outboxRetrying),
          ...(report.oldestPendingAgeMs === undefined
            ? {}
            : { oldestPendingAge: durationOf(report.oldestPendingAgeMs) }),
          ...(report.lastIndexedAt === undefined
            ? {}
            : { lastIndexedTime: timestampFromMs(report.lastIndexedAt) }),
          healthy: report.healthy,
          problems: [...report.problems],
          computeTime: timestampFromMs(report.computedAt),
        },
      };
    },
  };
}
