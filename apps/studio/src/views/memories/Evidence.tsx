import { useQuery } from '@connectrpc/connect-query';
import type { Evidence } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { Section } from '../../components/ui.js';
import { useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import { evidenceMessages, memCellSession, type EvidenceMessage } from './model.js';
import { memoriesText } from './text.js';

/**
 * One evidence message, linked to the Sessions view at its sequence (GetMessage gives the
 * sequence; a message the caller may not read, e.g. a reviewer's view of another user's memory,
 * links to its session only).
 */
function EvidenceItem({ item }: { readonly item: EvidenceMessage }) {
  const t = useMessages(memoriesText);
  const q = useQuery(IngestionService.method.getMessage, { name: item.name });
  const sequence = q.data?.message?.sequence;
  const href =
    sequence !== undefined
      ? routeHash('sessions', [item.sessionId], { message: String(sequence) })
      : routeHash('sessions', [item.sessionId]);
  return (
    <li data-evidence={item.name}>
      <a href={href}>
        {sequence !== undefined ? t.messageAt(Number(sequence)) : <code>{item.messageId}</code>}
      </a>{' '}
      <span className="muted">
        <code>{item.name}</code>
        {q.isError ? ` (${t.messageUnreadable})` : ''}
      </span>
      {q.data?.message !== undefined && q.data.message.content !== '' ? (
        <div className="evidence-content">{q.data.message.content}</div>
      ) : null}
    </li>
  );
}

export function EvidenceSection({ evidence }: { readonly evidence: Evidence | undefined }) {
  const t = useMessages(memoriesText);
  const messages = evidenceMessages(evidence);
  const memCell = evidence?.memCell ?? '';
  const cellSession = memCellSession(memCell);
  const chunks = evidence?.chunks ?? [];
  const excerpt = evidence?.excerpt ?? '';
  const empty = messages.length === 0 && memCell === '' && chunks.length === 0 && excerpt === '';
  return (
    <Section title={t.evidence} id="evidence-title">
      {empty ? <p className="muted">{t.noEvidence}</p> : null}
      {messages.length > 0 ? (
        <ul className="evidence-list">
          {messages.map((m) => (
            <EvidenceItem key={m.name} item={m} />
          ))}
        </ul>
      ) : null}
      {memCell !== '' ? (
        <p>
          {t.memCell}:{' '}
          {cellSession !== undefined ? (
            <a href={routeHash('sessions', [cellSession])}>
              <code>{memCell}</code>
            </a>
          ) : (
            <code>{memCell}</code>
          )}
        </p>
      ) : null}
      {chunks.length > 0 ? (
        <p>
          {t.chunks}:{' '}
          {chunks.map((c) => (
            <code key={c} className="chunk-name">
              {c}
            </code>
          ))}
        </p>
      ) : null}
      {excerpt !== '' ? (
        <blockquote className="evidence-excerpt">
          <span className="muted">{t.excerpt}: </span>
          {excerpt}
        </blockquote>
      ) : null}
    </Section>
  );
}
