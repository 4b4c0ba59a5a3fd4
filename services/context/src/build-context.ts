import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type CallOptions, type HandlerContext } from '@connectrpc/connect';
import type { BuildContextResponseSchema } from '@engram/contracts/context';
import { MemoryType } from '@engram/contracts/governance';
import type { Session } from '@engram/contracts/ingestion';
import type { SearchResponse } from '@engram/contracts/retrieval';
import {
  dependencyFailure,
  errorInfoOf,
  forwardedCallOptions,
  isEngramError,
  requirePrincipal,
} from '@engram/runtime';
import type { SessionStateRecord } from '@engram/store';
import {
  buildContextResponse,
  checkAssemblyRequest,
  factCandidate,
  knowledgeCandidates,
  searchText,
  type AssemblyRequest,
  type CheckedRequest,
} from './build-context-api.js';
import type { ContextDeps } from './deps.js';
import { assemble } from './domain/assembly.js';
import { tokenizerFor } from './domain/tokenizer.js';
import type { Assembly, FactCandidate, KnowledgeCandidate, OptionalLayer, Source } from './domain/types.js';
import { readSession, readTail, repairMark, turnCandidate, type Tail } from './session-access.js';

const MAX_FACTS = 200;

/** What an assembly is made of, for Chat to reuse. */
export interface BuiltContext {
  readonly request: CheckedRequest;
  readonly session: Session;
  readonly state: SessionStateRecord;
  readonly tail: Tail;
  readonly assembly: Assembly;
  readonly response: MessageInitShape<typeof BuildContextResponseSchema>;
}

/** The knowledge layer's source, and the search's statistics when it ran. */
interface Knowledge {
  readonly source: Source<KnowledgeCandidate>;
  readonly stats?: SearchResponse['stats'];
}

const isDisabled = (checked: CheckedRequest, layer: OptionalLayer) =>
  checked.layers.some((l) => l.layer === layer && l.maxTokens === 0);

/** Whether a dependency refused the call because it is overloaded (RESOURCE_EXHAUSTED `OVERLOADED`). */
function overloaded(error: Error): boolean {
  const code = isEngramError(error) ? error.code : ConnectError.from(error).code;
  const reason = isEngramError(error) ? error.reason : errorInfoOf(error)?.reason;
  return code === Code.ResourceExhausted && reason === 'OVERLOADED';
}

/**
 * Whether a failed read of a layer's source may leave the layer empty (not strict, not the caller's
 * fault): the source is unreachable, or overloaded (decision 0033: a BuildContext already admitted
 * answers without the layer rather than failing for a search its peer shed).
 */
function unavailable(error: Error, strict: boolean): boolean {
  if (strict) return false;
  const code = isEngramError(error) ? error.code : ConnectError.from(error).code;
  return code === Code.Unavailable || overloaded(error);
}

/**
 * Assembles the context of one turn (BuildContext; Chat's first step). Reads the session, its
 * state and tail, the evergreen facts and the knowledge concurrently, with the caller's
 * credential, then fills the layers. `defaultModel` is the tokenizer's model when the request
 * names none; `renderUserMessage` false leaves the user message out of the messages (Chat's
 * REPLY_AFTER_TOOLS: it is the session's newest USER turn already).
 */
export async function buildContext(
  deps: ContextDeps,
  request: AssemblyRequest,
  ctx: HandlerContext,
  defaultModel: string | undefined,
  { renderUserMessage = true }: { readonly renderUserMessage?: boolean } = {},
): Promise<BuiltContext> {
  const principal = requirePrincipal(ctx.values);
  const checked = checkAssemblyRequest(request, deps.settings);
  const call = forwardedCallOptions(ctx);
  const [session, state] = await Promise.all([
    readSession(deps.ingestion, checked.sessionId, call),
    deps.states.get(principal.tenantId, checked.sessionId),
  ]);
  repairMark(deps, principal, session, state);

  const [tail, facts, knowledge] = await Promise.all([
    readTail(deps.ingestion, session, state.compactedThroughSequence, call),
    isDisabled(checked, 'EVERGREEN_FACTS')
      ? Promise.resolve<Source<FactCandidate>>({ status: 'DISABLED' })
      : readFacts(deps, request, checked, call),
    isDisabled(checked, 'RETRIEVED_KNOWLEDGE')
      ? Promise.resolve<Knowledge>({ source: { status: 'DISABLED' } })
      : search(deps, request, checked, call),
  ]);

  const tokenizer = tokenizerFor(checked.model !== '' ? checked.model : (defaultModel ?? ''));
  const assembly = assemble({
    sessionName: session.name,
    systemPrompt: checked.systemPrompt,
    userMessage: checked.userMessage,
    renderUserMessage,
    tools: checked.tools,
    toolRendering: checked.toolRendering,
    keyPoints: state.keyPoints.map((k) => ({ id: k.id, text: k.text })),
    openLoops: state.openLoops.filter((l) => l.resolved !== true).map((l) => ({ id: l.id, text: l.text })),
    summary: state.summary,
    summaryMemory: state.summaryMemoryId === undefined ? '' : `memories/${state.summaryMemoryId}`,
    facts,
    knowledge: knowledge.source,
    turns: tail.messages.map(turnCandidate),
    uncompactedMessageCount: tail.uncompactedMessageCount,
    budget: {
      totalTokens: checked.totalTokens,
      reservedOutputTokens: checked.reservedOutputTokens,
      layers: checked.layers,
    },
    defaultShares: deps.settings.layerShares,
    knowledgeTopK: checked.topK,
    knowledgeMinScore: checked.minScore,
    evergreenMinConfidence: checked.evergreenMinConfidence,
    tokenizer,
  });
  const response = buildContextResponse({
    checked,
    session,
    state,
    tail,
    assembly,
    tokenizer,
    knowledgeStats: knowledge.stats,
  });
  return { request: checked, session, state, tail, assembly, response };
}

/** The caller's evergreen facts valid now, restricted by the knowledge filter's scopes and org. */
async function readFacts(
  { governance }: Pick<ContextDeps, 'governance'>,
  request: AssemblyRequest,
  checked: CheckedRequest,
  call: CallOptions,
): Promise<Source<FactCandidate>> {
  const filter = request.knowledge?.filter;
  const orgIds = filter?.orgIds ?? [];
  const facts: FactCandidate[] = [];
  try {
    // One read per org asked for (ListMemories filters one org at a time), else one for all.
    for (const orgId of orgIds.length === 0 ? [''] : orgIds) {
      let pageToken = '';
      do {
        const page = await governance.listMemories(
          {
            pageSize: 500,
            pageToken,
            types: [MemoryType.FACT],
            evergreenOnly: true,
            scopes: filter?.scopes ?? [],
            orgId,
            validAt: timestampFromMs(Date.now()),
          },
          call,
        );
        facts.push(...page.memories.map(factCandidate));
        pageToken = page.nextPageToken;
      } while (pageToken !== '' && facts.length < 5_000);
    }
  } catch (error) {
    const failure = dependencyFailure('governance', error);
    if (unavailable(failure, checked.strict))
      return { status: 'UNAVAILABLE', detail: 'governance unreachable' };
    throw failure;
  }
  const unique = [...new Map(facts.map((f) => [f.name, f])).values()];
  unique.sort(
    (a, b) => b.confidence - a.confidence || b.updatedAt - a.updatedAt || (a.name < b.name ? -1 : 1),
  );
  return { status: 'OK', items: unique.slice(0, MAX_FACTS) };
}

/** One retrieval Search for the knowledge layer (degraded answers allowed). */
async function search(
  { retrieval }: Pick<ContextDeps, 'retrieval'>,
  request: AssemblyRequest,
  checked: CheckedRequest,
  call: CallOptions,
): Promise<Knowledge> {
  let response: SearchResponse;
  try {
    response = await retrieval.search(
      {
        query: searchText(request),
        topK: Math.min(Math.max(2 * checked.topK, 10), 100),
        ...(request.knowledge?.filter !== undefined ? { filter: request.knowledge.filter } : {}),
        ...(request.knowledge?.options !== undefined ? { options: request.knowledge.options } : {}),
        allowDegraded: true,
      },
      call,
    );
  } catch (error) {
    const failure = dependencyFailure('retrieval', error);
    if (unavailable(failure, checked.strict)) {
      const detail = overloaded(failure) ? 'retrieval overloaded' : 'retrieval unreachable';
      return { source: { status: 'UNAVAILABLE', detail } };
    }
    throw failure;
  }
  return {
    source: { status: 'OK', items: response.results.flatMap(knowledgeCandidates) },
    stats: response.stats,
  };
}
