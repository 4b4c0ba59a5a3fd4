import { useQuery } from '@connectrpc/connect-query';
import { useState } from 'react';
import { IngestionService } from '@engram/contracts/ingestion';
import { ErrorNotice } from '../../components/ui.js';
import { formatAgo, shortName } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { contextText, type ContextText } from './messages.js';
import { buildContextRequest, type ContextField, type ContextForm } from './model.js';

type Set = <K extends keyof ContextForm>(field: K, value: ContextForm[K]) => void;
type TextField = Exclude<ContextField, 'strict' | 'session' | 'userMessage' | 'systemPrompt'>;

function Field({
  name,
  form,
  set,
  t,
  type = 'number',
}: {
  readonly name: TextField;
  readonly form: ContextForm;
  readonly set: Set;
  readonly t: ContextText;
  readonly type?: 'number' | 'text';
}) {
  return (
    <label className="block ctx-field">
      <span>{t[name]}</span>
      <input
        type={type}
        name={name}
        step="any"
        value={form[name]}
        onChange={(e) => set(name, e.target.value)}
      />
    </label>
  );
}

/** The caller's sessions to build for, or none (the preview session). */
function SessionSelect({
  form,
  set,
  t,
}: {
  readonly form: ContextForm;
  readonly set: Set;
  readonly t: ContextText;
}) {
  const { lang } = useLang();
  const sessions = useQuery(IngestionService.method.listSessions, { pageSize: 100 });
  const list = sessions.data?.sessions ?? [];
  const known = form.session === '' || list.some((s) => s.name === form.session);
  return (
    <div>
      <label className="block ctx-field">
        <span>{t.session}</span>
        <select name="session" value={form.session} onChange={(e) => set('session', e.target.value)}>
          <option value="">{t.noSession}</option>
          {!known ? <option value={form.session}>{shortName(form.session)}</option> : null}
          {list.map((s) => (
            <option key={s.name} value={s.name}>
              {s.displayName !== '' ? s.displayName : shortName(s.name)} · {String(s.messageCount)} ·{' '}
              {formatAgo(s.lastMessageTime ?? s.createTime, lang)}
            </option>
          ))}
        </select>
      </label>
      {form.session === '' ? <p className="muted ctx-hint">{t.noSessionHint}</p> : null}
      {sessions.isError ? (
        <div>
          <span className="muted">{t.sessionsFailed}</span>
          <ErrorNotice error={sessions.error} />
        </div>
      ) : null}
    </div>
  );
}

/** The inputs of a BuildContext request; `onBuild` gets the form once its numbers are valid. */
export function ContextFormPanel({
  initial,
  busy,
  onBuild,
}: {
  readonly initial: ContextForm;
  readonly busy: boolean;
  readonly onBuild: (form: ContextForm) => void;
}) {
  const t = useMessages(contextText);
  const [form, setForm] = useState(initial);
  const [problems, setProblems] = useState<readonly ContextField[]>([]);
  const set: Set = (field, value) => setForm((f) => ({ ...f, [field]: value }));
  return (
    <form
      className="ctx-form"
      onSubmit={(e) => {
        e.preventDefault();
        const built = buildContextRequest(form, form.session);
        setProblems(built.problems);
        if (built.problems.length === 0) onBuild(form);
      }}
    >
      <label className="block">
        <span>{t.userMessage}</span>
        <textarea
          name="userMessage"
          rows={3}
          value={form.userMessage}
          onChange={(e) => set('userMessage', e.target.value)}
        />
      </label>
      <div className="ctx-grid">
        <Field name="totalTokens" form={form} set={set} t={t} />
        <SessionSelect form={form} set={set} t={t} />
      </div>
      <details className="ctx-options">
        <summary>{t.advanced}</summary>
        <label className="block">
          <span>{t.systemPrompt}</span>
          <textarea
            name="systemPrompt"
            rows={2}
            value={form.systemPrompt}
            onChange={(e) => set('systemPrompt', e.target.value)}
          />
        </label>
        <div className="ctx-grid">
          <Field name="reservedOutputTokens" form={form} set={set} t={t} />
          <Field name="model" form={form} set={set} t={t} type="text" />
          <Field name="knowledgeQuery" form={form} set={set} t={t} type="text" />
          <Field name="knowledgeTopK" form={form} set={set} t={t} />
          <Field name="knowledgeMinScore" form={form} set={set} t={t} />
          <Field name="evergreenMinConfidence" form={form} set={set} t={t} />
        </div>
        <label className="block">
          <input
            type="checkbox"
            name="strict"
            checked={form.strict}
            onChange={(e) => set('strict', e.target.checked)}
          />{' '}
          {t.strict}
        </label>
      </details>
      {problems.length > 0 ? (
        <p className="error" role="alert">
          {t.notNumber} {problems.map((p) => t[p]).join(', ')}
        </p>
      ) : null}
      <div className="row">
        <button type="submit" className="primary" disabled={busy || form.userMessage.trim() === ''}>
          {t.build}
        </button>
      </div>
    </form>
  );
}
