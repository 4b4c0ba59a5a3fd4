import { useState, type SyntheticEvent } from 'react';
import { Scope } from '@engram/contracts/common';
import { MemoryStatus, MemoryType } from '@engram/contracts/governance';
import { enumName } from '../../lib/format.js';
import { useMessages } from '../../lib/i18n.js';
import { navigate, routeHash } from '../../lib/route.js';
import {
  filtersToQuery,
  MEMORY_STATUSES,
  MEMORY_TYPES,
  NO_FILTERS,
  SCOPES,
  splitList,
  type MemoryFilters,
} from './model.js';
import { memoriesText } from './text.js';

/** Checkboxes for some values of an enum, in a fieldset with a legend. */
function EnumChecks<E extends number>({
  legend,
  name,
  enumObject,
  values,
  chosen,
  onChange,
}: {
  readonly legend: string;
  readonly name: string;
  readonly enumObject: Readonly<Record<number, string>>;
  readonly values: readonly E[];
  readonly chosen: readonly E[];
  readonly onChange: (chosen: E[]) => void;
}) {
  return (
    <fieldset className="checks">
      <legend>{legend}</legend>
      {values.map((v) => (
        <label key={v}>
          <input
            type="checkbox"
            name={name}
            value={enumName(enumObject, v)}
            checked={chosen.includes(v)}
            onChange={(e) => onChange(e.target.checked ? [...chosen, v] : chosen.filter((c) => c !== v))}
          />{' '}
          {enumName(enumObject, v)}
        </label>
      ))}
    </fieldset>
  );
}

/** The list's filters; applying them changes the URL query (so the list can be linked). */
export function FilterForm({ filters }: { readonly filters: MemoryFilters }) {
  const t = useMessages(memoriesText);
  const [draft, setDraft] = useState(filters);
  const [namespaces, setNamespaces] = useState(filters.namespaces.join(', '));
  const set = (patch: Partial<MemoryFilters>) => setDraft((d) => ({ ...d, ...patch }));
  const onSubmit = (e: SyntheticEvent) => {
    e.preventDefault();
    navigate(routeHash('memories', [], filtersToQuery({ ...draft, namespaces: splitList(namespaces) })));
  };
  const onClear = () => {
    setDraft(NO_FILTERS);
    setNamespaces('');
    navigate(routeHash('memories'));
  };
  return (
    <form className="memory-filters" onSubmit={onSubmit} aria-label={t.filters}>
      <div className="filter-groups">
        <EnumChecks
          legend={t.type}
          name="type"
          enumObject={MemoryType}
          values={MEMORY_TYPES}
          chosen={draft.types}
          onChange={(types) => set({ types })}
        />
        <EnumChecks
          legend={`${t.status} (${t.defaultActive})`}
          name="status"
          enumObject={MemoryStatus}
          values={MEMORY_STATUSES}
          chosen={draft.statuses}
          onChange={(statuses) => set({ statuses })}
        />
        <EnumChecks
          legend={t.scope}
          name="scope"
          enumObject={Scope}
          values={SCOPES}
          chosen={draft.scopes}
          onChange={(scopes) => set({ scopes })}
        />
      </div>
      <div className="row">
        <label>
          {t.namespaces}{' '}
          <input name="namespaces" value={namespaces} onChange={(e) => setNamespaces(e.target.value)} />
        </label>
        <label>
          {t.createdFrom}{' '}
          <input type="date" name="from" value={draft.from} onChange={(e) => set({ from: e.target.value })} />
        </label>
        <label>
          {t.createdTo}{' '}
          <input type="date" name="to" value={draft.to} onChange={(e) => set({ to: e.target.value })} />
        </label>
        <label>
          <input
            type="checkbox"
            name="evergreenOnly"
            checked={draft.evergreenOnly}
            onChange={(e) => set({ evergreenOnly: e.target.checked })}
          />{' '}
          {t.evergreenOnly}
        </label>
        <button type="submit" className="primary">
          {t.apply}
        </button>
        <button type="button" onClick={onClear}>
          {t.clear}
        </button>
      </div>
    </form>
  );
}
