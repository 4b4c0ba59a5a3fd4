import { useInfiniteQuery } from '@connectrpc/connect-query';
import { IngestionService, SessionStatus } from '@engram/contracts/ingestion';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Section, Tag } from '../../components/ui.js';
import { enumName, formatCount, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { routeHash } from '../../lib/route.js';
import { sessionId, stripPrefix } from './model.js';
import { sessionsText } from './text.js';

const PAGE_SIZE = 25;

/** The signed-in user's sessions, most recently active first, paged with "Load more". */
export function SessionList() {
  const t = useMessages(sessionsText);
  const { lang } = useLang();
  const q = useInfiniteQuery(
    IngestionService.method.listSessions,
    { pageSize: PAGE_SIZE, pageToken: '' },
    PAGED,
  );
  const sessions = q.data?.pages.flatMap((p) => p.sessions) ?? [];
  return (
    <Section title={t.title} id="sessions-title">
      <p className="muted">{t.intro}</p>
      <ErrorNotice error={q.error} />
      {q.isPending ? <Loading /> : null}
      {!q.isPending && q.error === null && sessions.length === 0 ? <Empty>{t.noSessions}</Empty> : null}
      {sessions.length > 0 ? (
        <table className="sessions-table" data-testid="sessions-table">
          <thead>
            <tr>
              <th scope="col">{t.name}</th>
              <th scope="col">{t.status}</th>
              <th scope="col">{t.messages}</th>
              <th scope="col">{t.memCells}</th>
              <th scope="col">{t.lastMessage}</th>
              <th scope="col">{t.created}</th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={s.name} data-session={s.name}>
                <td>
                  <a href={routeHash('sessions', [sessionId(s.name)])}>
                    {s.displayName !== '' ? s.displayName : t.untitled}
                  </a>
                  <div className="muted mono small">{sessionId(s.name)}</div>
                </td>
                <td>
                  <Tag tone={s.status === SessionStatus.ACTIVE ? 'ok' : 'plain'}>
                    {stripPrefix(enumName(SessionStatus, s.status), 'SESSION_STATUS_')}
                  </Tag>
                </td>
                <td className="num">{formatCount(s.messageCount, lang)}</td>
                <td className="num">{formatCount(s.memCellCount, lang)}</td>
                <td>{formatTime(s.lastMessageTime, lang)}</td>
                <td>{formatTime(s.createTime, lang)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <div className="row">
        <LoadMore pages={q} />
      </div>
    </Section>
  );
}
