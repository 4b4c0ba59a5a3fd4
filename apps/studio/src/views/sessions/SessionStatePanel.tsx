import { useQuery } from '@connectrpc/connect-query';
import { ContextService } from '@engram/contracts/context';
import { Empty, ErrorNotice, KeyValues, Loading, Section, Tag } from '../../components/ui.js';
import { formatCount, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { sessionStateName } from './model.js';
import { sessionsText } from './text.js';

/** The context service's state of the session: summary, key points, open loops. */
export function SessionStatePanel({ id }: { readonly id: string }) {
  const t = useMessages(sessionsText);
  const { lang } = useLang();
  const q = useQuery(ContextService.method.getSessionState, { name: sessionStateName(id) });
  const state = q.data?.sessionState;
  const empty =
    state !== undefined &&
    state.summary === '' &&
    state.keyPoints.length === 0 &&
    state.openLoops.length === 0;
  return (
    <Section title={t.state} id="session-state">
      <div className="session-state" data-testid="session-state">
        <ErrorNotice error={q.error} />
        {q.isPending ? <Loading /> : null}
        {empty ? <Empty>{t.stateEmpty}</Empty> : null}
        {state !== undefined && !empty ? (
          <>
            <KeyValues
              rows={[
                [t.version, String(state.version)],
                [t.compactedThrough, formatCount(state.compactedThroughSequence, lang)],
                [t.updated, formatTime(state.updateTime, lang)],
              ]}
            />
            <h3>{t.summary}</h3>
            {state.summary !== '' ? (
              <p className="state-summary" data-testid="state-summary">
                {state.summary}
              </p>
            ) : (
              <Empty>{t.none}</Empty>
            )}
            <h3>{t.keyPoints}</h3>
            {state.keyPoints.length > 0 ? (
              <ul className="state-list" data-testid="state-key-points">
                {state.keyPoints.map((k) => (
                  <li key={k.id}>{k.text}</li>
                ))}
              </ul>
            ) : (
              <Empty>{t.none}</Empty>
            )}
            <h3>{t.openLoops}</h3>
            {state.openLoops.length > 0 ? (
              <ul className="state-list" data-testid="state-open-loops">
                {state.openLoops.map((l) => (
                  <li key={l.id}>
                    {l.text} {l.resolved ? <Tag tone="ok">{t.resolved}</Tag> : null}
                  </li>
                ))}
              </ul>
            ) : (
              <Empty>{t.none}</Empty>
            )}
          </>
        ) : null}
      </div>
    </Section>
  );
}
