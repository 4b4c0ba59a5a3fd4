import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs, anyPack } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { ErrorInfoSchema, type StatusSchema } from '@engram/contracts/grpc';
import { ReindexJobState, ReindexMode, type ReindexJobSchema } from '@engram/contracts/retrieval';
import { errors } from '@engram/runtime';
import type { ReindexJobRecord, ReindexKind, ReindexJobState as StoredState } from '@engram/store';

/** Request kinds → stored kinds: empty means all three; UNSPECIFIED or too many are invalid. */
export function reindexKinds(kinds: readonly ItemKind[]): ReindexKind[] {
  if (kinds.length > 3) throw errors.fieldInvalid('kinds', 'at most 3 entries');
  if (kinds.includes(ItemKind.UNSPECIFIED))
    throw errors.fieldInvalid('kinds', 'ITEM_KIND_UNSPECIFIED is not a kind');
  const chosen = kinds.length === 0 ? [ItemKind.MEMORY, ItemKind.CHUNK, ItemKind.ROUND] : kinds;
  return [ItemKind.MEMORY, ItemKind.CHUNK, ItemKind.ROUND]
    .filter((k) => chosen.includes(k))
    .map((k) => ItemKind[k] as ReindexKind);
}

/** The request mode → stored mode (FIELD_REQUIRED when unset). */
export function reindexMode(mode: ReindexMode): 'FULL' | 'MISSING_ONLY' {
  if (mode === ReindexMode.FULL) return 'FULL';
  if (mode === ReindexMode.MISSING_ONLY) return 'MISSING_ONLY';
  throw errors.fieldRequired('mode');
}

const STATES: Record<StoredState, ReindexJobState> = {
  PENDING: ReindexJobState.PENDING,
  RUNNING: ReindexJobState.RUNNING,
  SUCCEEDED: ReindexJobState.SUCCEEDED,
  FAILED: ReindexJobState.FAILED,
  CANCELLED: ReindexJobState.CANCELLED,
};

/** Proto job state → stored state. */
export function storedState(state: ReindexJobState): StoredState {
  const found = (Object.entries(STATES) as [StoredState, ReindexJobState][]).find(([, s]) => s === state);
  if (found === undefined)
    throw errors.fieldInvalid('states', 'REINDEX_JOB_STATE_UNSPECIFIED is not a state');
  return found[0];
}

/** A stored job as the API's `ReindexJob`. */
export function reindexJobMessage(job: ReindexJobRecord): MessageInitShape<typeof ReindexJobSchema> {
  const error: MessageInitShape<typeof StatusSchema> | undefined =
    job.error === undefined
      ? undefined
      : {
          code:
            job.error.reason === 'SHUTTING_DOWN' || job.error.reason === 'DEPENDENCY_UNAVAILABLE'
              ? Code.Unavailable
              : Code.Internal,
          message: job.error.message,
          details: [
            anyPack(
              ErrorInfoSchema,
              create(ErrorInfoSchema, { reason: job.error.reason, domain: 'engram.retrieval' }),
            ),
          ],
        };
  return {
    name: `reindexJobs/${job.id}`,
    kinds: job.kinds.map((k) => ItemKind[k]),
    mode: job.mode === 'FULL' ? ReindexMode.FULL : ReindexMode.MISSING_ONLY,
    state: STATES[job.state],
    creator: job.creator,
    rowsTotal: BigInt(job.rowsTotal),
    rowsScanned: BigInt(job.rowsScanned),
    pointsUpserted: BigInt(job.pointsUpserted),
    pointsDeleted: BigInt(job.pointsDeleted),
    rowsUnchanged: BigInt(job.rowsUnchanged),
    errorCount: BigInt(job.errorCount),
    errorSamples: job.errorSamples.map((e) => ({
      kind: ItemKind[e.kind],
      item: e.item,
      message: e.message,
      time: timestampFromMs(e.time),
    })),
    ...(error === undefined ? {} : { error }),
    embeddingModel: job.embeddingModel,
    embeddingDimensions: job.embeddingDimensions,
    createTime: timestampFromMs(job.createdAt),
    updateTime: timestampFromMs(job.updatedAt),
    ...(job.startedAt === undefined ? {} : { startTime: timestampFromMs(job.startedAt) }),
    ...(job.completedAt === undefined ? {} : { completeTime: timestampFromMs(job.completedAt) }),
  };
}
