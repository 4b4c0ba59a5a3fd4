import { Code, ConnectError, type Client, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type {
  ContextService,
  KeyPoint as KeyPointMessage,
  OpenLoop as OpenLoopMessage,
} from '@engram/contracts/context';
import type { IngestionService } from '@engram/contracts/ingestion';
import { checkUpdateMask, parseMessageName } from '@engram/resources';
import {
  dependencyFailure,
  errors,
  forwardedCallOptions,
  requirePrincipal,
  requireRole,
  type Logger,
} from '@engram/runtime';
import {
  etagMismatch,
  forgetResults,
  inTransaction,
  newId,
  SessionStateRepository,
  type KeyPoint,
  type OpenLoop,
  type SessionStateRecord,
  type Store,
} from '@engram/store';
import { chatMethodOf } from './chat-replays.js';
import { parseStateName, readSession, readTail, stateEtag, stateMessage } from './session-access.js';
import type { SessionLocks } from './session-locks.js';
import { countO200kTokens } from './domain/tokenizer.js';

/** What the session-state methods are built from. */
export interface StateDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly ingestion: Client<typeof IngestionService>;
  readonly locks: SessionLocks;
}

/** Limits of context.proto (`SessionState`, `KeyPoint`, `OpenLoop`). */
export const STATE_LIMITS = {
  summaryChars: 16_000,
  items: 50,
  itemChars: 1_000,
  sources: 20,
} as const;

const UPDATABLE_PATHS = ['summary', 'key_points', 'open_loops'] as const;

const chars = (s: string) => Array.from(s).length;

/**
 * `GetSessionState`, `UpdateSessionState` and `DeleteSessionState` of
 * `engram.context.v1.ContextService`.
 */
export function createStateHandlers(
  deps: StateDeps,
): Pick<ServiceImpl<typeof ContextService>, 'getSessionState' | 'updateSessionState' | 'deleteSessionState'> {
  const states = new SessionStateRepository(deps.store);

  /** The state with its tail measured, as the API returns it. */
  const present = async (ctx: HandlerContext, sessionId: string, state?: SessionStateRecord) => {
    const call = forwardedCallOptions(ctx);
    const session = await readSession(deps.ingestion, sessionId, call);
    const current = state ?? (await states.get(requirePrincipal(ctx.values).tenantId, sessionId));
    const tail = await readTail(deps.ingestion, session, current.compactedThroughSequence, call, 0);
    return stateMessage(current, tail);
  };

  return {
    async getSessionState(request, ctx) {
      const sessionId = parseStateName(request.name);
      return { sessionState: await present(ctx, sessionId) };
    },

    async updateSessionState(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      const input = request.sessionState;
      if (input === undefined) throw errors.fieldRequired('session_state');
      const sessionId = parseStateName(input.name, 'session_state.name');
      const paths = request.updateMask?.paths ?? [];
      checkUpdateMask(paths, UPDATABLE_PATHS);
      const call = forwardedCallOptions(ctx);
      // The session must be the caller's (NOT_FOUND otherwise) before anything else is looked at.
      await readSession(deps.ingestion, sessionId, call);
      const summary = paths.includes('summary') ? checkSummary(input.summary) : undefined;
      const keyPoints = paths.includes('key_points')
        ? checkItems(input.keyPoints, 'key_points', sessionId)
        : undefined;
      const openLoops = paths.includes('open_loops')
        ? checkItems(input.openLoops, 'open_loops', sessionId)
        : undefined;
      await checkSourcesExist(deps.ingestion, sessionId, [...(keyPoints ?? []), ...(openLoops ?? [])], call);

      const saved = await deps.locks.run(`${principal.tenantId}/${sessionId}`, () =>
        inTransaction(deps.store, async (trx) => {
          const current = await states.get(principal.tenantId, sessionId, trx);
          if (input.etag !== '' && input.etag !== stateEtag(current)) throw etagMismatch(input.name);
          const now = Date.now();
          return states.save(trx, principal.tenantId, sessionId, current.version, {
            summary: summary ?? current.summary,
            summaryTokenCount: summary === undefined ? current.summaryTokenCount : countO200kTokens(summary),
            keyPoints:
              keyPoints === undefined
                ? current.keyPoints
                : mergeItems(current.keyPoints, keyPoints, 'key_points', now),
            openLoops:
              openLoops === undefined
                ? current.openLoops
                : mergeItems(current.openLoops, openLoops, 'open_loops', now),
            compactedThroughSequence: current.compactedThroughSequence,
            summaryMemoryId: current.summaryMemoryId,
            lastCompactedAt: current.lastCompactedAt,
          });
        }),
      );
      deps.logger.info({ session: sessionId, paths, version: saved.version }, 'session state updated');
      return { sessionState: await present(ctx, sessionId, saved) };
    },

    async deleteSessionState(request, ctx) {
      const principal = requirePrincipal(ctx.values);
      requireRole(principal, 'service');
      const sessionId = parseStateName(request.name);
      const deleted = await deps.locks.run(`${principal.tenantId}/${sessionId}`, () =>
        inTransaction(deps.store, (trx) => states.delete(trx, principal.tenantId, sessionId)),
      );
      await forgetResults(deps.store, principal.tenantId, chatMethodOf(sessionId));
      deps.logger.info({ session: sessionId, deleted }, 'session state deleted');
      return { deleted };
    },
  };
}

function checkSummary(summary: string): string {
  if (chars(summary) > STATE_LIMITS.summaryChars) {
    throw errors.fieldInvalid('session_state.summary', `at most ${STATE_LIMITS.summaryChars} characters`);
  }
  return summary;
}

/** A client-written item, validated: its id ('' for a new one), text and source message ids. */
interface ItemInput {
  readonly id: string;
  readonly text: string;
  readonly sourceMessageIds: readonly string[];
  readonly resolved?: boolean;
}

function checkItems(
  items: readonly (KeyPointMessage | OpenLoopMessage)[],
  path: 'key_points' | 'open_loops',
  sessionId: string,
): ItemInput[] {
  const field = `session_state.${path}`;
  if (items.length > STATE_LIMITS.items)
    throw errors.fieldInvalid(field, `at most ${STATE_LIMITS.items} items`);
  const seen = new Set<string>();
  return items.map((item, i) => {
    const at = `${field}[${i}]`;
    if (item.text.trim() === '') throw errors.fieldRequired(`${at}.text`);
    if (chars(item.text) > STATE_LIMITS.itemChars) {
      throw errors.fieldInvalid(`${at}.text`, `at most ${STATE_LIMITS.itemChars} characters`);
    }
    if (item.id !== '') {
      if (seen.has(item.id)) throw errors.fieldInvalid(`${at}.id`, `${item.id} appears twice`);
      seen.add(item.id);
    }
    if (item.sourceMessages.length > STATE_LIMITS.sources) {
      throw errors.fieldInvalid(`${at}.source_messages`, `at most ${STATE_LIMITS.sources} messages`);
    }
    const sourceMessageIds = item.sourceMessages.map((name, j) => {
      const parsed = parseMessageName(name, `${at}.source_messages[${j}]`);
      if (parsed.sessionId !== sessionId) {
        throw errors.fieldInvalid(`${at}.source_messages[${j}]`, `${name} is not a message of this session`);
      }
      return parsed.messageId;
    });
    return {
      id: item.id,
      text: item.text,
      sourceMessageIds,
      ...('resolved' in item ? { resolved: item.resolved } : {}),
    };
  });
}

/** Every cited message must exist in the session (FIELD_INVALID otherwise). */
async function checkSourcesExist(
  ingestion: Client<typeof IngestionService>,
  sessionId: string,
  items: readonly ItemInput[],
  call: Parameters<Client<typeof IngestionService>['getMessage']>[1],
): Promise<void> {
  const ids = [...new Set(items.flatMap((i) => i.sourceMessageIds))];
  // At most 20 reads at a time.
  for (let i = 0; i < ids.length; i += 20) await checkSome(ids.slice(i, i + 20));
  async function checkSome(some: readonly string[]) {
    await Promise.all(
      some.map(async (id) => {
        const name = `sessions/${sessionId}/messages/${id}`;
        try {
          await ingestion.getMessage({ name }, call);
        } catch (error) {
          const failure = dependencyFailure('ingestion', error);
          if (ConnectError.from(failure).code === Code.NotFound) {
            throw errors.fieldInvalid(
              'session_state.source_messages',
              `${name} is not a message of this session`,
            );
          }
          throw failure;
        }
      }),
    );
  }
}

/**
 * The new list: items keep their id and create time when their id is sent back; a
 * compaction-made item whose text or sources change becomes the client's; new items get new ids.
 */
function mergeItems<T extends KeyPoint | OpenLoop>(
  current: readonly T[],
  items: readonly ItemInput[],
  path: 'key_points' | 'open_loops',
  now: number,
): T[] {
  const byId = new Map(current.map((item) => [item.id, item]));
  return items.map((input, i): T => {
    if (input.id === '') {
      return {
        id: newId(now),
        text: input.text,
        sourceMessageIds: input.sourceMessageIds,
        origin: 'CLIENT',
        createdAt: now,
        updatedAt: now,
        ...(input.resolved === true ? { resolved: true, resolvedAt: now } : {}),
      } as T;
    }
    const existing = byId.get(input.id);
    if (existing === undefined) {
      throw errors.fieldInvalid(`session_state.${path}[${i}].id`, `${input.id} is not an item of this state`);
    }
    const contentChanged =
      existing.text !== input.text || existing.sourceMessageIds.join() !== input.sourceMessageIds.join();
    const wasResolved = (existing as OpenLoop).resolved === true;
    const resolved = input.resolved ?? wasResolved;
    const changed = contentChanged || resolved !== wasResolved;
    return {
      ...existing,
      text: input.text,
      sourceMessageIds: input.sourceMessageIds,
      origin: contentChanged ? 'CLIENT' : existing.origin,
      updatedAt: changed ? now : existing.updatedAt,
      ...(path === 'open_loops'
        ? { resolved, resolvedAt: resolved ? ((existing as OpenLoop).resolvedAt ?? now) : undefined }
        : {}),
    };
  });
}
