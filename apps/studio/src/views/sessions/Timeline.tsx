import { useInfiniteQuery } from '@connectrpc/connect-query';
import { useEffect, useMemo } from 'react';
import type { ExtractionJob } from '@engram/contracts/governance';
import { IngestionService, MessageRole, type MemCell, type Message } from '@engram/contracts/ingestion';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Tag } from '../../components/ui.js';
import { enumName, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { Boundary } from './Boundary.js';
import { buildTimeline, messageAnchor, needsMorePages } from './model.js';
import { sessionsText } from './text.js';

export const MESSAGE_PAGE_SIZE = 50;

const ROLE_TONE: Record<number, string> = {
  [MessageRole.USER]: 'info',
  [MessageRole.ASSISTANT]: 'ok',
  [MessageRole.SYSTEM]: 'plain',
  [MessageRole.TOOL]: 'warn',
};

function MessageRow({ message, highlighted }: { readonly message: Message; readonly highlighted: boolean }) {
  const t = useMessages(sessionsText);
  const { lang } = useLang();
  return (
    <li
      id={messageAnchor(message.sequence)}
      className={`message role-${enumName(MessageRole, message.role).toLowerCase()}${highlighted ? ' highlighted' : ''}`}
      data-sequence={String(message.sequence)}
      aria-current={highlighted ? 'true' : undefined}
    >
      <div className="message-head">
        <span className="mono">#{String(message.sequence)}</span>
        <Tag tone={ROLE_TONE[message.role] ?? 'plain'}>{enumName(MessageRole, message.role)}</Tag>
        {message.participantName !== '' ? <span className="mono">{message.participantName}</span> : null}
        <time className="muted">{formatTime(message.occurTime, lang)}</time>
        <span className="muted">
          {message.tokenCount} {t.tokens}
        </span>
        {message.compacted ? <Tag>{t.compacted}</Tag> : null}
        {highlighted ? <Tag tone="info">{t.highlighted}</Tag> : null}
      </div>
      {message.toolCallId !== '' ? (
        <div className="muted small">
          {t.answers} <code>{message.toolCallId}</code>
        </div>
      ) : null}
      {message.content !== '' ? <div className="message-text">{message.content}</div> : null}
      {message.toolCalls.length > 0 ? (
        <div className="tool-calls">
          <strong>{t.toolCalls}</strong>
          <ul>
            {message.toolCalls.map((call) => (
              <li key={call.id}>
                <code>{call.name}</code> <span className="muted mono small">{call.id}</span>
                {call.argumentsJson !== '' ? <pre>{call.argumentsJson}</pre> : null}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </li>
  );
}

/**
 * The session's messages in order with a boundary (reason, extraction jobs) after the last message
 * of every MemCell. A deep-linked `target` sequence is loaded (page after page), scrolled to and
 * highlighted.
 */
export function Timeline({
  name,
  target,
  cells,
  jobsByCell,
  ready,
}: {
  readonly name: string;
  readonly target: bigint | undefined;
  readonly cells: readonly MemCell[];
  readonly jobsByCell: ReadonlyMap<string, readonly ExtractionJob[]>;
  /** Whether everything above the timeline's messages has loaded (so a scroll stays put). */
  readonly ready: boolean;
}) {
  const t = useMessages(sessionsText);
  const q = useInfiniteQuery(
    IngestionService.method.listMessages,
    { parent: name, pageSize: MESSAGE_PAGE_SIZE, pageToken: '' },
    PAGED,
  );
  const messages = useMemo(() => q.data?.pages.flatMap((p) => p.messages) ?? [], [q.data]);
  const items = useMemo(() => buildTimeline(messages, cells), [messages, cells]);
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = q;
  const loadMore = needsMorePages(messages, target, hasNextPage);
  useEffect(() => {
    if (loadMore && !isFetchingNextPage) void fetchNextPage();
  }, [loadMore, isFetchingNextPage, fetchNextPage]);
  const present = target !== undefined && messages.some((m) => m.sequence === target);
  // Scroll once what is drawn above the message (session facts, boundaries, jobs) is loaded.
  useEffect(() => {
    if (present && ready) document.getElementById(messageAnchor(target))?.scrollIntoView({ block: 'center' });
  }, [present, ready, target]);
  if (q.isPending) return <Loading />;
  return (
    <>
      <ErrorNotice error={q.error} />
      {loadMore && target !== undefined ? (
        <p className="muted" role="status">
          {t.loadingTo(Number(target))}
        </p>
      ) : null}
      {target !== undefined && !present && !loadMore && q.error === null ? (
        <p className="muted" role="status">
          {t.notFoundSeq(Number(target))}
        </p>
      ) : null}
      {items.length === 0 && q.error === null ? <Empty>{t.noMessages}</Empty> : null}
      <ol className="timeline session-timeline" data-testid="timeline">
        {items.map((item) =>
          item.kind === 'message' ? (
            <MessageRow
              key={item.message.name}
              message={item.message}
              highlighted={item.message.sequence === target}
            />
          ) : item.kind === 'boundary' ? (
            <Boundary
              key={`b-${item.cell.name}`}
              cell={item.cell}
              jobs={jobsByCell.get(item.cell.name) ?? []}
            />
          ) : (
            <li key="open-tail" className="open-tail muted" data-testid="open-tail">
              {t.openTail}
            </li>
          ),
        )}
      </ol>
      <div className="row">
        <LoadMore pages={q} label={t.loadOlder} />
      </div>
    </>
  );
}
