import { useInfiniteQuery, useQuery } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { ExtractionJobView, GovernanceService } from '@engram/contracts/governance';
import { IngestionService, SessionStatus } from '@engram/contracts/ingestion';
import { ErrorNotice, KeyValues, Loading, Section, Tag } from '../../components/ui.js';
import { enumName, formatCount, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { routeHash } from '../../lib/route.js';
import { FlushAction } from './FlushAction.js';
import { jobsByMemCell, sessionName } from './model.js';
import { SessionStatePanel } from './SessionStatePanel.js';
import { sessionsText } from './text.js';
import { Timeline } from './Timeline.js';

/** Every MemCell and every extraction job of the session (all pages, fetched one after another). */
function useCellsAndJobs(name: string) {
  const cells = useInfiniteQuery(
    IngestionService.method.listMemCells,
    { parent: name, pageSize: 500, pageToken: '' },
    PAGED,
  );
  const jobs = useInfiniteQuery(
    GovernanceService.method.listExtractionJobs,
    { session: name, view: ExtractionJobView.FULL, pageSize: 100, pageToken: '' },
    PAGED,
  );
  const { hasNextPage: moreCells, isFetchingNextPage: fetchingCells, fetchNextPage: nextCells } = cells;
  const { hasNextPage: moreJobs, isFetchingNextPage: fetchingJobs, fetchNextPage: nextJobs } = jobs;
  useEffect(() => {
    if (moreCells && !fetchingCells) void nextCells();
  }, [moreCells, fetchingCells, nextCells]);
  useEffect(() => {
    if (moreJobs && !fetchingJobs) void nextJobs();
  }, [moreJobs, fetchingJobs, nextJobs]);
  const memCells = cells.data?.pages.flatMap((p) => p.memCells) ?? [];
  const jobList = jobs.data?.pages.flatMap((p) => p.extractionJobs) ?? [];
  return { cells, jobs, memCells, byCell: jobsByMemCell(jobList) };
}

/** One session: its facts, the timeline with MemCell boundaries and extraction, and its state. */
export function SessionDetail({ id, target }: { readonly id: string; readonly target: bigint | undefined }) {
  const t = useMessages(sessionsText);
  const { lang } = useLang();
  const name = sessionName(id);
  const queryClient = useQueryClient();
  const session = useQuery(IngestionService.method.getSession, { name });
  const { cells, jobs, memCells, byCell } = useCellsAndJobs(name);
  const s = session.data?.session;
  const title = s === undefined ? id : s.displayName !== '' ? s.displayName : t.untitled;
  return (
    <div className="sessions-detail">
      <p>
        <a href={routeHash('sessions')}>← {t.back}</a>
      </p>
      <Section
        title={title}
        id="session-title"
        actions={
          <button type="button" onClick={() => void queryClient.invalidateQueries()}>
            {t.refresh}
          </button>
        }
      >
        <ErrorNotice error={session.error} />
        {session.isPending ? <Loading /> : null}
        {s !== undefined ? (
          <KeyValues
            rows={[
              [
                t.status,
                <Tag key="s" tone={s.status === SessionStatus.ACTIVE ? 'ok' : 'plain'}>
                  {enumName(SessionStatus, s.status)}
                </Tag>,
              ],
              [t.messages, formatCount(s.messageCount, lang)],
              [t.memCells, formatCount(s.memCellCount, lang)],
              [t.openMessages, formatCount(s.openMessageCount, lang)],
              [t.lastMessage, formatTime(s.lastMessageTime, lang)],
              [t.created, formatTime(s.createTime, lang)],
              ...(s.externalId !== '' ? [[t.externalId, <code key="e">{s.externalId}</code>] as const] : []),
              ...(s.timeZone !== '' ? [[t.timeZone, s.timeZone] as const] : []),
            ]}
          />
        ) : null}
        {s !== undefined ? <FlushAction name={name} active={s.status === SessionStatus.ACTIVE} /> : null}
      </Section>
      <div className="sessions-columns">
        <Section title={t.timeline} id="session-timeline">
          <ErrorNotice error={cells.error} />
          <ErrorNotice error={jobs.error} />
          <Timeline
            name={name}
            target={target}
            cells={memCells}
            jobsByCell={byCell}
            ready={
              !session.isPending &&
              !cells.isPending &&
              !jobs.isPending &&
              !cells.hasNextPage &&
              !jobs.hasNextPage
            }
          />
        </Section>
        <SessionStatePanel id={id} />
      </div>
    </div>
  );
}
