import { createConnectQueryKey, useInfiniteQuery, useMutation, useQuery } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import {
  GovernanceService,
  MemoryStatus,
  ReviewVerdict,
  type Decision,
  type Memory,
} from '@engram/contracts/governance';
import { LoadMore } from '../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Section } from '../components/ui.js';
import { enumName, shortName } from '../lib/format.js';
import { useMessages } from '../lib/i18n.js';
import { PAGED } from '../lib/paging.js';
import type { ViewProps } from '../lib/route.js';
import { currentToken, decodeClaims } from '../lib/session.js';
import { reasonRule, reviewRequest } from './memories/model.js';
import { DecisionBox, MemoryTable, RefusalNotice, StatusTag } from './memories/parts.js';
import { memoriesText } from './memories/text.js';
import './memories.css';

/** The rule that held the memory: its status reason, and the rule of its latest rule-driven revision. */
function HeldBy({ memory }: { readonly memory: Memory }) {
  const t = useMessages(memoriesText);
  const q = useQuery(GovernanceService.method.listMemoryRevisions, { parent: memory.name, pageSize: 100 });
  const held = [...(q.data?.revisions ?? [])].reverse().find((r) => r.rule !== '');
  const rule = held?.rule ?? reasonRule(memory.statusReason);
  return (
    <div className="held-by" data-rule={rule ?? ''}>
      {t.heldBy}: {rule !== undefined ? <code className="held-rule">{rule}</code> : '—'}
      {held !== undefined && held.reason !== '' && held.reason !== memory.statusReason ? (
        <div className="muted small">{held.reason}</div>
      ) : null}
      <ErrorNotice error={q.error} />
    </div>
  );
}

/** What the last review did. */
interface Reviewed {
  readonly note: string;
  readonly status: MemoryStatus;
  readonly decision?: Decision;
}

/** Approve / reject one quarantined memory with a reason (ReviewMemory). */
function ReviewControls({
  memory,
  onDone,
}: {
  readonly memory: Memory;
  readonly onDone: (done: Reviewed) => void;
}) {
  const t = useMessages(memoriesText);
  const queryClient = useQueryClient();
  const [reason, setReason] = useState(t.defaultReviewReason);
  const review = useMutation(GovernanceService.method.reviewMemory, {
    onSuccess: async (r, request) => {
      const name = shortName(memory.name);
      onDone({
        note: request.verdict === ReviewVerdict.APPROVE ? t.approved(name) : t.rejected(name),
        status: r.memory?.status ?? MemoryStatus.UNSPECIFIED,
        ...(r.decision !== undefined ? { decision: r.decision } : {}),
      });
      // Only the lists: the reviewed memory may no longer be visible to the reviewer (an approved
      // SELF memory is its owner's), so its own queries are left to unmount with its row.
      await queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({
          schema: GovernanceService.method.listMemories,
          cardinality: undefined,
        }),
      });
    },
  });
  const send = (verdict: ReviewVerdict) =>
    review.mutate({ name: memory.name, verdict, reason: reason.trim(), etag: memory.etag });
  return (
    <div className="review-controls">
      <HeldBy memory={memory} />
      <label>
        {t.reviewReason}{' '}
        <input name="reviewReason" value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <div className="row">
        <button
          type="button"
          className="primary"
          disabled={review.isPending}
          onClick={() => send(ReviewVerdict.APPROVE)}
        >
          {t.approve}
        </button>
        <button
          type="button"
          className="danger"
          disabled={review.isPending}
          onClick={() => send(ReviewVerdict.REJECT)}
        >
          {t.reject}
        </button>
      </div>
      <RefusalNotice error={review.error} />
    </div>
  );
}

/** `#/review`: the tenant's QUARANTINED memories for a reviewer (the `admin` role). */
export function ReviewView({ route }: ViewProps) {
  const t = useMessages(memoriesText);
  const claims = decodeClaims(currentToken() ?? '');
  const reviewer = claims?.roles.includes('admin') === true;
  const [done, setDone] = useState<Reviewed | undefined>();
  const q = useInfiniteQuery(GovernanceService.method.listMemories, reviewRequest(), PAGED);
  const memories = q.data?.pages.flatMap((p) => p.memories) ?? [];
  return (
    <div className="memories-view review-view" data-route={route.view}>
      <h1>{t.reviewTitle}</h1>
      <p className="muted">{t.reviewIntro}</p>
      {!reviewer ? (
        <p className="notice-role" role="note">
          {t.notReviewer}
        </p>
      ) : null}
      {done !== undefined ? (
        <div className="action-result" role="status" data-testid="review-result">
          <p>
            {done.note} {t.nowStatus} <StatusTag status={done.status} />
          </p>
          {done.decision !== undefined ? <DecisionBox decision={done.decision} /> : null}
        </div>
      ) : null}
      <Section
        title={`${t.reviewTitle} · ${enumName(MemoryStatus, MemoryStatus.QUARANTINED)}`}
        id="queue-title"
      >
        {q.isPending ? <Loading /> : null}
        <ErrorNotice error={q.error} />
        {q.isSuccess && memories.length === 0 ? <Empty>{t.queueEmpty}</Empty> : null}
        {memories.length > 0 ? (
          <MemoryTable
            memories={memories}
            showOwner
            extra={(m) => <ReviewControls memory={m} onDone={setDone} />}
          />
        ) : null}
        <LoadMore pages={q} />
      </Section>
    </div>
  );
}
