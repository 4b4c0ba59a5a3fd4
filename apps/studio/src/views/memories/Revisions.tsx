import { useInfiniteQuery } from '@connectrpc/connect-query';
import {
  ActorKind,
  GovernanceService,
  RevisionAction,
  type MemoryRevision,
} from '@engram/contracts/governance';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Section, Tag } from '../../components/ui.js';
import { enumName, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { StatusTag } from './parts.js';
import { memoriesText } from './text.js';

function actorText(r: MemoryRevision): string {
  const a = r.actor;
  if (a === undefined) return '—';
  const who = [a.subject, a.component].filter((s) => s !== '').join(' · ');
  return `${enumName(ActorKind, a.kind)}${who === '' ? '' : ` ${who}`}`;
}

function RevisionRow({ revision: r }: { readonly revision: MemoryRevision }) {
  const { lang } = useLang();
  return (
    <tr data-revision={r.name} data-action={enumName(RevisionAction, r.action)}>
      <td>{String(r.version)}</td>
      <td>
        <Tag tone="info">{enumName(RevisionAction, r.action)}</Tag>
      </td>
      <td>{actorText(r)}</td>
      <td>{r.rule === '' ? '—' : <code className="revision-rule">{r.rule}</code>}</td>
      <td className="revision-reason">{r.reason === '' ? '—' : r.reason}</td>
      <td>
        {r.changedPaths === undefined || r.changedPaths.paths.length === 0
          ? '—'
          : r.changedPaths.paths.join(', ')}
      </td>
      <td className="revision-after">
        {r.after !== undefined ? (
          <>
            <StatusTag status={r.after.status} /> {r.after.text}
          </>
        ) : (
          '—'
        )}
      </td>
      <td>{formatTime(r.createTime, lang)}</td>
    </tr>
  );
}

/** Every revision of the memory, oldest first, with the rule and reason that shaped each. */
export function RevisionsSection({ name }: { readonly name: string }) {
  const t = useMessages(memoriesText);
  const q = useInfiniteQuery(
    GovernanceService.method.listMemoryRevisions,
    { parent: name, pageSize: 100, pageToken: '' },
    PAGED,
  );
  const revisions = q.data?.pages.flatMap((p) => p.revisions) ?? [];
  return (
    <Section title={t.revisions} id="revisions-title">
      {q.isPending ? <Loading /> : null}
      <ErrorNotice error={q.error} />
      {q.isSuccess && revisions.length === 0 ? <Empty>{t.noRevisions}</Empty> : null}
      {revisions.length > 0 ? (
        <table className="revisions-table">
          <thead>
            <tr>
              <th scope="col">{t.version}</th>
              <th scope="col">{t.action}</th>
              <th scope="col">{t.actor}</th>
              <th scope="col">{t.rule}</th>
              <th scope="col">{t.reason}</th>
              <th scope="col">{t.changed}</th>
              <th scope="col">{t.after}</th>
              <th scope="col">{t.when}</th>
            </tr>
          </thead>
          <tbody>
            {revisions.map((r) => (
              <RevisionRow key={r.name} revision={r} />
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={q} />
    </Section>
  );
}
