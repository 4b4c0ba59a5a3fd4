import { useQuery } from '@connectrpc/connect-query';
import { Scope } from '@engram/contracts/common';
import { GovernanceService, MemoryType, SourceKind, type Memory } from '@engram/contracts/governance';
import { ErrorNotice, KeyValues, Loading, Section, Tag } from '../../components/ui.js';
import { enumName, formatAgo, formatScore, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import { EvidenceSection } from './Evidence.js';
import { MemoryActions } from './MemoryActions.js';
import { valueText } from './model.js';
import { MemoryLink, StatusTag } from './parts.js';
import { RevisionsSection } from './Revisions.js';
import { memoriesText } from './text.js';

/** The memory's fields. */
function MemoryFields({ memory: m }: { readonly memory: Memory }) {
  const t = useMessages(memoriesText);
  const { lang } = useLang();
  const expiry =
    m.expireTime === undefined
      ? t.never
      : `${formatTime(m.expireTime, lang)} (${formatAgo(m.expireTime, lang)})`;
  const metadata = Object.entries(m.metadata);
  return (
    <KeyValues
      rows={[
        [t.text, <span className="memory-detail-text">{m.text}</span>],
        ...(m.value !== undefined
          ? [[t.value, <pre className="memory-value">{valueText(m.value)}</pre>] as const]
          : []),
        [t.type, enumName(MemoryType, m.type)],
        [t.status, <StatusTag status={m.status} />],
        [
          t.statusReason,
          m.statusReason === '' ? '—' : <span className="status-reason">{m.statusReason}</span>,
        ],
        [t.namespaceKey, m.namespace === '' ? '—' : <code>{`${m.namespace}/${m.key}`}</code>],
        [
          t.scope,
          m.orgId === '' ? enumName(Scope, m.scope) : `${enumName(Scope, m.scope)} (${t.org} ${m.orgId})`,
        ],
        [t.owner, m.owner],
        [t.confidence, m.confidence === undefined ? '—' : formatScore(m.confidence)],
        [t.evergreen, <span data-evergreen={String(m.evergreen)}>{m.evergreen ? t.yes : t.no}</span>],
        [t.sourceKind, enumName(SourceKind, m.sourceKind)],
        [t.expires, expiry],
        [t.validFrom, formatTime(m.validFromTime, lang)],
        [t.validUntil, formatTime(m.validUntilTime, lang)],
        [t.occurred, formatTime(m.occurTime, lang)],
        [t.created, formatTime(m.createTime, lang)],
        [t.updated, formatTime(m.updateTime, lang)],
        [t.version, <span data-version={String(m.version)}>{String(m.version)}</span>],
        [t.language, m.languageCode === '' ? '—' : m.languageCode],
        ...(metadata.length > 0
          ? [[t.metadata, metadata.map(([k, v]) => `${k}=${v}`).join(', ')] as const]
          : []),
      ]}
    />
  );
}

/** Supersedes / superseded by, as links to the other memories. */
function ChainSection({ memory }: { readonly memory: Memory }) {
  const t = useMessages(memoriesText);
  return (
    <Section title={t.chain} id="chain-title">
      {memory.supersedes === '' && memory.supersededBy === '' ? (
        <p className="muted">{t.noChain}</p>
      ) : (
        <KeyValues
          rows={[
            ...(memory.supersedes !== ''
              ? [[t.supersedes, <MemoryLink name={memory.supersedes} />] as const]
              : []),
            ...(memory.supersededBy !== ''
              ? [[t.supersededBy, <MemoryLink name={memory.supersededBy} />] as const]
              : []),
          ]}
        />
      )}
    </Section>
  );
}

/** `#/memories/<id>`: one memory, its actions, evidence, supersede chain and every revision. */
export function MemoryDetail({ id }: { readonly id: string }) {
  const t = useMessages(memoriesText);
  const name = `memories/${id}`;
  const q = useQuery(GovernanceService.method.getMemory, { name });
  const memory = q.data?.memory;
  return (
    <div className="memories-view memory-detail" data-memory={name}>
      <p>
        <a href={routeHash('memories')}>{t.back}</a>
      </p>
      <h1>
        {t.detail} <code>{id}</code>{' '}
        {memory?.evergreen === true ? <Tag tone="info">{t.evergreen}</Tag> : null}
      </h1>
      {q.isPending ? <Loading /> : null}
      <ErrorNotice error={q.error} />
      {memory !== undefined ? (
        <>
          <Section title={t.detail} id="detail-title">
            <MemoryFields memory={memory} />
          </Section>
          <MemoryActions memory={memory} />
          <EvidenceSection evidence={memory.evidence} />
          <ChainSection memory={memory} />
        </>
      ) : null}
      {q.isSuccess ? <RevisionsSection name={name} /> : null}
    </div>
  );
}
