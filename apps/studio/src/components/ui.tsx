import type { ReactNode } from 'react';
import { describeError, errorSentence } from '../lib/errors.js';
import { defineMessages, useLang, useMessages } from '../lib/i18n.js';

const text = defineMessages({
  en: { loading: 'Loading…', empty: 'Nothing here yet.', details: 'Details', retryIn: 'retry in' },
  zh: { loading: '加载中…', empty: '这里还没有内容。', details: '详情', retryIn: '重试等待' },
});

/**
 * A failed call: the human sentence, the ErrorInfo reason and gRPC code, the server's message and
 * the error's metadata. Never a blank screen.
 */
export function ErrorNotice({ error }: { readonly error: unknown }) {
  const { lang } = useLang();
  const t = useMessages(text);
  if (error === null || error === undefined) return null;
  const described = describeError(error);
  const metadata = Object.entries(described.metadata);
  return (
    <div className="error" role="alert" data-reason={described.reason}>
      <strong>{errorSentence(described, lang)}</strong> <code className="reason">{described.reason}</code>
      {described.reason !== described.code ? <code className="code">{described.code}</code> : null}
      {described.message !== '' ? <div className="error-message">{described.message}</div> : null}
      {described.retryAfterSeconds !== undefined ? (
        <div>
          {t.retryIn} {described.retryAfterSeconds.toFixed(1)} s
        </div>
      ) : null}
      {metadata.length > 0 ? (
        <details>
          <summary>{t.details}</summary>
          <dl className="kv">
            {metadata.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        </details>
      ) : null}
    </div>
  );
}

export function Loading() {
  const t = useMessages(text);
  return (
    <p className="muted" role="status">
      {t.loading}
    </p>
  );
}

export function Empty({ children }: { readonly children?: ReactNode }) {
  const t = useMessages(text);
  return <p className="muted empty">{children ?? t.empty}</p>;
}

/** A titled block of a view, with optional actions on the right of its title. */
export function Section({
  title,
  actions,
  children,
  id,
}: {
  readonly title: ReactNode;
  readonly actions?: ReactNode;
  readonly children: ReactNode;
  readonly id?: string;
}) {
  return (
    <section className="section" aria-labelledby={id}>
      <header className="section-head">
        <h2 id={id}>{title}</h2>
        {actions !== undefined ? <div className="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** Label–value pairs. */
export function KeyValues({ rows }: { readonly rows: readonly (readonly [ReactNode, ReactNode])[] }) {
  return (
    <dl className="kv">
      {rows.map(([label, value], i) => (
        <div key={i}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A horizontal bar of `value` out of `max`, labelled for screen readers. */
export function Bar({
  value,
  max,
  label,
  tone = 'accent',
}: {
  readonly value: number;
  readonly max: number;
  readonly label: string;
  readonly tone?: 'accent' | 'lexical' | 'dense' | 'muted' | 'warn';
}) {
  const share = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  return (
    <span
      className="bar"
      role="meter"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={max}
      aria-valuenow={value}
    >
      <span className={`bar-fill tone-${tone}`} style={{ width: `${(share * 100).toFixed(1)}%` }} />
    </span>
  );
}

/** One bar split into labelled segments (e.g. tokens per context layer), with a legend. */
export function StackedBar({
  segments,
  label,
}: {
  readonly segments: readonly { readonly key: string; readonly label: string; readonly value: number }[];
  readonly label: string;
}) {
  const total = segments.reduce((sum, s) => sum + Math.max(0, s.value), 0);
  return (
    <figure className="stacked" aria-label={label}>
      <div className="stacked-bar">
        {segments.map((s, i) =>
          s.value > 0 ? (
            <span
              key={s.key}
              className={`stacked-seg seg-${i % 8}`}
              style={{ width: `${((s.value / total) * 100).toFixed(2)}%` }}
              title={`${s.label}: ${String(s.value)}`}
            />
          ) : null,
        )}
      </div>
      <figcaption className="legend">
        {segments.map((s, i) => (
          <span key={s.key} className="legend-item">
            <span className={`swatch seg-${i % 8}`} />
            {s.label} <strong>{s.value}</strong>
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** A short coloured label (a status, a kind). */
export function Tag({ children, tone = 'plain' }: { readonly children: ReactNode; readonly tone?: string }) {
  return <span className={`tag tag-${tone}`}>{children}</span>;
}
