import { useState, type ReactNode } from 'react';
import { useMessages } from '../../lib/i18n.js';
import { navigate, routeHash } from '../../lib/route.js';
import { searchText, type SearchText } from './messages.js';
import {
  buildSearchRequest,
  EMPTY_FORM,
  formToQuery,
  FUSIONS,
  RECENCIES,
  SEARCH_KINDS,
  type FieldProblem,
  type SearchForm,
  type Toggle,
} from './model.js';

type Set = <K extends keyof SearchForm>(field: K, value: SearchForm[K]) => void;

function NumberField({
  label,
  name,
  form,
  set,
  step = 'any',
}: {
  readonly label: string;
  readonly name:
    'topK' | 'minScore' | 'vectorWeight' | 'textWeight' | 'halfLifeDays' | 'recencyWeight' | 'mmrLambda';
  readonly form: SearchForm;
  readonly set: Set;
  readonly step?: string;
}) {
  return (
    <label className="block search-field">
      <span>{label}</span>
      <input
        type="number"
        name={name}
        step={step}
        inputMode="decimal"
        value={form[name]}
        onChange={(e) => set(name, e.target.value)}
      />
    </label>
  );
}

function ChoiceField<T extends string>({
  label,
  name,
  value,
  choices,
  onChange,
  t,
}: {
  readonly label: string;
  readonly name: string;
  readonly value: T;
  readonly choices: readonly { readonly value: T; readonly label: string }[];
  readonly onChange: (value: T) => void;
  readonly t: SearchText;
}) {
  return (
    <label className="block search-field">
      <span>{label}</span>
      <select name={name} value={value} onChange={(e) => onChange(e.target.value as T)}>
        <option value="default">{t.serverDefault}</option>
        {choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </label>
  );
}

function toggleChoices(t: SearchText): { value: Toggle; label: string }[] {
  return [
    { value: 'on', label: t.on },
    { value: 'off', label: t.off },
  ];
}

function Fieldset({ legend, children }: { readonly legend: string; readonly children: ReactNode }) {
  return (
    <fieldset className="search-group">
      <legend>{legend}</legend>
      {children}
    </fieldset>
  );
}

/** The ranking options (weights, fusion, recency, MMR). */
function RankingOptions({
  form,
  set,
  t,
}: {
  readonly form: SearchForm;
  readonly set: Set;
  readonly t: SearchText;
}) {
  return (
    <>
      <Fieldset legend={t.weights}>
        <NumberField label={t.vectorWeight} name="vectorWeight" form={form} set={set} />
        <NumberField label={t.textWeight} name="textWeight" form={form} set={set} />
        <ChoiceField
          label={t.fusion}
          name="fusion"
          value={form.fusion}
          choices={FUSIONS.map((f) => ({ value: f, label: f }))}
          onChange={(v) => set('fusion', v)}
          t={t}
        />
        <p className="muted search-hint">{t.weightsHint}</p>
      </Fieldset>
      <Fieldset legend={t.recency}>
        <ChoiceField
          label={t.decay}
          name="decay"
          value={form.decay}
          choices={toggleChoices(t)}
          onChange={(v) => set('decay', v)}
          t={t}
        />
        <ChoiceField
          label={t.recency}
          name="recency"
          value={form.recency}
          choices={RECENCIES.map((r) => ({ value: r, label: r }))}
          onChange={(v) => set('recency', v)}
          t={t}
        />
        <NumberField label={t.halfLifeDays} name="halfLifeDays" form={form} set={set} />
        <NumberField label={t.recencyWeight} name="recencyWeight" form={form} set={set} />
      </Fieldset>
      <Fieldset legend={t.mmr}>
        <ChoiceField
          label={t.mmr}
          name="mmr"
          value={form.mmr}
          choices={toggleChoices(t)}
          onChange={(v) => set('mmr', v)}
          t={t}
        />
        <NumberField label={t.mmrLambda} name="mmrLambda" form={form} set={set} />
      </Fieldset>
    </>
  );
}

/** What is searched (kinds, time range) and how many results come back. */
function FilterOptions({
  form,
  set,
  t,
}: {
  readonly form: SearchForm;
  readonly set: Set;
  readonly t: SearchText;
}) {
  return (
    <>
      <Fieldset legend={t.kinds}>
        {SEARCH_KINDS.map((kind) => (
          <label key={kind} className="search-check">
            <input
              type="checkbox"
              name={`kind-${kind}`}
              checked={form.kinds.includes(kind)}
              onChange={(e) =>
                set(
                  'kinds',
                  e.target.checked
                    ? SEARCH_KINDS.filter((k) => k === kind || form.kinds.includes(k))
                    : form.kinds.filter((k) => k !== kind),
                )
              }
            />{' '}
            {kind}
          </label>
        ))}
        <p className="muted search-hint">{t.allKinds}</p>
      </Fieldset>
      <Fieldset legend={t.results}>
        <NumberField label={t.topK} name="topK" form={form} set={set} step="1" />
        <NumberField label={t.minScore} name="minScore" form={form} set={set} />
        <label className="block search-field">
          <span>{t.from}</span>
          <input
            type="datetime-local"
            name="from"
            value={form.from}
            onChange={(e) => set('from', e.target.value)}
          />
        </label>
        <label className="block search-field">
          <span>{t.until}</span>
          <input
            type="datetime-local"
            name="until"
            value={form.until}
            onChange={(e) => set('until', e.target.value)}
          />
        </label>
      </Fieldset>
    </>
  );
}

/**
 * The query box and the request's options. Submitting puts the whole form in the URL
 * (`#/search?q=…`); the view searches for what the URL says, so a search can be linked.
 */
export function SearchFormPanel({
  initial,
  onRepeat,
}: {
  readonly initial: SearchForm;
  /** Called when the form asks for the search the URL already holds (search again). */
  readonly onRepeat: () => void;
}) {
  const t = useMessages(searchText);
  const [form, setForm] = useState(initial);
  const [problems, setProblems] = useState<readonly FieldProblem[]>([]);
  const set: Set = (field, value) => setForm((f) => ({ ...f, [field]: value }));
  return (
    <form
      className="search-form"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        const built = buildSearchRequest(form);
        setProblems(built.problems);
        if (built.problems.length > 0 || form.query.trim() === '') return;
        const hash = routeHash('search', [], formToQuery(form));
        if (hash === globalThis.location.hash) onRepeat();
        else navigate(hash);
      }}
    >
      <div className="row">
        <label className="search-query">
          <span className="sr-only">{t.query}</span>
          <input
            type="search"
            name="q"
            placeholder={t.query}
            value={form.query}
            onChange={(e) => set('query', e.target.value)}
            maxLength={4000}
          />
        </label>
        <button type="submit" className="primary" disabled={form.query.trim() === ''}>
          {t.search}
        </button>
      </div>
      <details className="search-options" open={formToQueryHasOptions(initial)}>
        <summary>{t.options}</summary>
        <p className="muted">{t.optionsHint}</p>
        <div className="search-groups">
          <RankingOptions form={form} set={set} t={t} />
          <FilterOptions form={form} set={set} t={t} />
        </div>
        <label className="search-check">
          <input
            type="checkbox"
            name="allowDegraded"
            checked={form.allowDegraded}
            onChange={(e) => set('allowDegraded', e.target.checked)}
          />{' '}
          {t.allowDegraded}
        </label>
        <div className="row">
          <button type="button" onClick={() => setForm({ ...EMPTY_FORM, query: form.query })}>
            {t.reset}
          </button>
        </div>
      </details>
      {problems.length > 0 ? (
        <p className="error" role="alert">
          {t.notNumber} {problems.map((p) => t[p]).join(', ')}
        </p>
      ) : null}
    </form>
  );
}

/** Whether a form sets any option beyond the query (then the options start open). */
function formToQueryHasOptions(form: SearchForm): boolean {
  return Object.keys(formToQuery(form)).some((k) => k !== 'q');
}
