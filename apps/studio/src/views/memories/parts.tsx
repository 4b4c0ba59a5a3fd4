import type { ReactNode } from 'react';
import { Scope } from '@engram/contracts/common';
import { MemoryStatus, MemoryType, type Decision, type Memory } from '@engram/contracts/governance';
import { RuleTrace } from '../../components/RuleTrace.js';
import { ErrorNotice, Tag } from '../../components/ui.js';
import { describeError } from '../../lib/errors.js';
import { enumName, formatScore, formatTime, shortName } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import { decisionSummary, refusalRule, statusTone } from './model.js';
import { memoriesText } from './text.js';

/** A link to a memory's detail view (`#/memories/<id>`), labelled with its id. */
export function MemoryLink({ name }: { readonly name: string }) {
  return (
    <a href={routeHash('memories', [shortName(name)])}>
      <code>{shortName(name)}</code>
    </a>
  );
}

export function StatusTag({ status }: { readonly status: MemoryStatus }) {
  return (
    <Tag tone={statusTone(status)}>
      <span data-status={enumName(MemoryStatus, status)}>{enumName(MemoryStatus, status)}</span>
    </Tag>
  );
}

/** The memories of a list page as a table; the text links to the detail view. */
export function MemoryTable({
  memories,
  showOwner = false,
  extra,
}: {
  readonly memories: readonly Memory[];
  readonly showOwner?: boolean;
  readonly extra?: (memory: Memory) => ReactNode;
}) {
  const t = useMessages(memoriesText);
  const { lang } = useLang();
  return (
    <table className="memories-table">
      <thead>
        <tr>
          <th scope="col">{t.text}</th>
          <th scope="col">{t.type}</th>
          <th scope="col">{t.status}</th>
          <th scope="col">{t.namespaceKey}</th>
          <th scope="col">{t.scope}</th>
          {showOwner ? <th scope="col">{t.owner}</th> : null}
          <th scope="col">{t.confidence}</th>
          <th scope="col">{t.created}</th>
          {extra !== undefined ? <th scope="col">{t.actions}</th> : null}
        </tr>
      </thead>
      <tbody>
        {memories.map((m) => (
          <tr key={m.name} data-memory={m.name}>
            <td className="memory-text">
              <a href={routeHash('memories', [shortName(m.name)])}>
                {m.text === '' ? shortName(m.name) : m.text}
              </a>
              {m.evergreen ? (
                <>
                  {' '}
                  <Tag tone="info">{t.evergreen}</Tag>
                </>
              ) : null}
              {m.statusReason !== '' ? <div className="muted small">{m.statusReason}</div> : null}
            </td>
            <td>{enumName(MemoryType, m.type)}</td>
            <td>
              <StatusTag status={m.status} />
            </td>
            <td>{m.namespace === '' ? '—' : <code>{`${m.namespace}/${m.key}`}</code>}</td>
            <td>{enumName(Scope, m.scope)}</td>
            {showOwner ? <td>{m.owner}</td> : null}
            <td>{m.confidence === undefined ? '—' : formatScore(m.confidence)}</td>
            <td>{formatTime(m.createTime, lang)}</td>
            {extra !== undefined ? <td>{extra(m)}</td> : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A governance decision: outcome, deciding rule, sentence, and the full rule trace. */
export function DecisionBox({ decision }: { readonly decision: Decision }) {
  const t = useMessages(memoriesText);
  const s = decisionSummary(decision);
  return (
    <div className={`decision decision-${s.tone}`} data-outcome={s.outcome} data-rule={s.rule}>
      <div>
        <strong>{t.decision}:</strong> <Tag tone={s.tone}>{s.outcome}</Tag>{' '}
        {s.rule !== '' ? (
          <>
            {t.rule} <code className="decision-rule">{s.rule}</code>
          </>
        ) : null}
      </div>
      {s.reason !== '' ? <p className="decision-reason">{s.reason}</p> : null}
      {s.notes.length > 0 ? (
        <ul className="decision-notes">
          {s.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      ) : null}
      <RuleTrace decision={decision} />
    </div>
  );
}

/** A failed write: the shell's ErrorNotice, plus the rule that refused it when the server named one. */
export function RefusalNotice({ error }: { readonly error: unknown }) {
  const t = useMessages(memoriesText);
  if (error === null || error === undefined) return null;
  const rule = refusalRule(describeError(error).metadata);
  return (
    <div className="refusal">
      <ErrorNotice error={error} />
      {rule !== undefined ? (
        <p className="refusal-rule" data-rule={rule}>
          {t.refusedBy} <code>{rule}</code>
        </p>
      ) : null}
    </div>
  );
}
