import type { SearchResponse, SearchResult } from '@engram/contracts/retrieval';
import { Bar, Empty, KeyValues, Section, Tag } from '../../components/ui.js';
import { formatScore, formatTime } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import { searchText, type SearchText } from './messages.js';
import {
  breakdownRows,
  kindName,
  resultSource,
  resultText,
  stageTimings,
  statsRows,
  type BreakdownRow,
} from './model.js';

const ROW_LABEL: Readonly<Record<BreakdownRow['key'], keyof SearchText>> = {
  lexical: 'lexical',
  dense: 'dense',
  rerank: 'rerank',
  fused: 'fused',
  timeWindow: 'timeWindow',
  relevance: 'relevance',
  recency: 'recencyRow',
  mmr: 'mmrRow',
  final: 'final',
};

function label(t: SearchText, key: keyof SearchText): string {
  const value = t[key];
  return typeof value === 'string' ? value : key;
}

/** The per-signal bars of one result. */
function Breakdown({ result, t }: { readonly result: SearchResult; readonly t: SearchText }) {
  if (result.breakdown === undefined) return <span className="muted">—</span>;
  return (
    <table className="breakdown">
      <tbody>
        {breakdownRows(result.breakdown).map((row) => {
          const name = label(t, ROW_LABEL[row.key]);
          return (
            <tr key={row.key} data-signal={row.key}>
              <th scope="row">{name}</th>
              <td>
                <Bar
                  value={row.value}
                  max={row.max}
                  tone={row.tone}
                  label={`${name} ${formatScore(row.value)}`}
                />
              </td>
              <td className="mono">{formatScore(row.value)}</td>
              <td className="muted breakdown-detail">{row.detail}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function ResultRow({ result, t }: { readonly result: SearchResult; readonly t: SearchText }) {
  const { lang } = useLang();
  const source = resultSource(result);
  const occur =
    result.item.case === 'round'
      ? result.item.value.occurTime
      : result.item.case === 'memory'
        ? (result.item.value.occurTime ?? result.item.value.createTime)
        : undefined;
  return (
    <tr className="search-result" data-name={result.name} data-kind={kindName(result.kind)}>
      <td className="mono">{result.rank}</td>
      <td>
        <Tag tone="info">{kindName(result.kind)}</Tag>
      </td>
      <td className="search-text">
        <div className="result-text">{resultText(result)}</div>
        <div className="muted result-source">
          {result.document !== undefined ? <span>{result.document.displayName} · </span> : null}
          {occur !== undefined ? <span>{formatTime(occur, lang)} · </span> : null}
          {source !== undefined ? (
            <a href={routeHash(source.view, source.rest, source.query)}>
              {t.open} {result.name}
            </a>
          ) : (
            <span className="mono">{result.name}</span>
          )}
        </div>
      </td>
      <td className="mono result-score">{formatScore(result.score)}</td>
      <td>
        <Breakdown result={result} t={t} />
      </td>
    </tr>
  );
}

function Stats({ response, t }: { readonly response: SearchResponse; readonly t: SearchText }) {
  const stats = response.stats;
  if (stats === undefined) return null;
  const stages = stageTimings(stats);
  const slowest = Math.max(0, ...stages.map((s) => s.ms));
  return (
    <Section title={t.stats} id="search-stats">
      <div className="search-stats" data-testid="search-stats">
        <KeyValues
          rows={statsRows(stats).map((row) => [label(t, row.key as keyof SearchText), row.value] as const)}
        />
        {stages.length > 0 ? (
          <table className="search-stages">
            <caption className="muted">{t.stages}</caption>
            <thead>
              <tr>
                <th scope="col">{t.stage}</th>
                <th scope="col">{t.time}</th>
                <th scope="col">
                  <span className="sr-only">{t.time}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {stages.map((s) => (
                <tr key={s.stage}>
                  <td className="mono">{s.stage}</td>
                  <td className="mono">{s.ms.toFixed(2)} ms</td>
                  <td>
                    <Bar value={s.ms} max={slowest} tone="muted" label={`${s.stage} ${s.ms.toFixed(2)} ms`} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </div>
    </Section>
  );
}

/** A search's ranked results, each with its per-signal bars, and the search's stats. */
export function SearchResults({ response }: { readonly response: SearchResponse }) {
  const t = useMessages(searchText);
  return (
    <>
      <Section
        title={t.results}
        id="search-results"
        actions={<span className="muted">{t.resultsCount(response.results.length)}</span>}
      >
        {response.results.length === 0 ? (
          <Empty>{t.noResults}</Empty>
        ) : (
          <table className="search-results">
            <thead>
              <tr>
                <th scope="col">{t.rank}</th>
                <th scope="col">{t.kind}</th>
                <th scope="col">{t.text}</th>
                <th scope="col">{t.score}</th>
                <th scope="col">{t.explanation}</th>
              </tr>
            </thead>
            <tbody>
              {response.results.map((r) => (
                <ResultRow key={r.name} result={r} t={t} />
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Stats response={response} t={t} />
    </>
  );
}
