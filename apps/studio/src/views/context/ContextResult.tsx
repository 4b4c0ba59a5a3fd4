import { ChatRole, LayerStatus, type BuildContextResponse, type TraceItem } from '@engram/contracts/context';
import { Bar, KeyValues, Section, StackedBar, Tag } from '../../components/ui.js';
import { formatScore } from '../../lib/format.js';
import { useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import { contextText, layerLabel, type ContextText } from './messages.js';
import {
  groupTrace,
  layerName,
  reasonName,
  roleName,
  segmentsTotal,
  statusName,
  tokenSegments,
  traceCounts,
  traceKindName,
  traceLink,
} from './model.js';

/** The assembled messages, in order, as the model receives them. */
function Messages({ response, t }: { readonly response: BuildContextResponse; readonly t: ContextText }) {
  return (
    <Section title={t.messages} id="ctx-messages">
      <ol className="ctx-messages" data-testid="ctx-messages">
        {response.messages.map((m, i) => (
          <li key={i} className="ctx-message" data-role={roleName(m.role)}>
            <div className="ctx-message-head">
              <Tag tone={m.role === ChatRole.USER ? 'info' : 'plain'}>{roleName(m.role)}</Tag>
              {m.name !== '' ? <span className="mono">{m.name}</span> : null}
              {m.toolCallId !== '' ? <span className="mono">← {m.toolCallId}</span> : null}
              <span className="muted">{t.tokens(response.messageTokens[i] ?? 0)}</span>
            </div>
            <pre className="ctx-content">{m.content}</pre>
            {m.toolCalls.length > 0 ? (
              <div className="muted">
                {t.toolCalls}: {m.toolCalls.map((c) => c.name).join(', ')}
              </div>
            ) : null}
          </li>
        ))}
      </ol>
      {response.tools.length > 0 ? (
        <p>
          {t.tools}: <span className="mono">{response.tools.map((tool) => tool.name).join(', ')}</span>
        </p>
      ) : null}
    </Section>
  );
}

/** Tokens per layer: the stacked bar (adding up to `total_tokens`) and the per-layer table. */
function Usage({ response, t }: { readonly response: BuildContextResponse; readonly t: ContextText }) {
  const segments = tokenSegments(response);
  const total = segmentsTotal(segments);
  return (
    <Section title={t.usage} id="ctx-usage">
      <p data-testid="ctx-total" data-total={total} data-budget={response.budgetTokens}>
        <Bar value={response.totalTokens} max={response.budgetTokens} label={t.usage} />{' '}
        <strong>{t.totalOfBudget(response.totalTokens, response.budgetTokens)}</strong>
      </p>
      <StackedBar
        label={t.usage}
        segments={segments.map((s) => ({ key: s.key, label: layerLabel(t, s.key), value: s.value }))}
      />
      <table className="ctx-layers">
        <thead>
          <tr>
            <th scope="col">{t.layer}</th>
            <th scope="col">{t.status}</th>
            <th scope="col">{t.share}</th>
            <th scope="col">{t.baseBudget}</th>
            <th scope="col">{t.budget}</th>
            <th scope="col">{t.used}</th>
            <th scope="col">{t.includedCount}</th>
            <th scope="col">{t.droppedCount}</th>
            <th scope="col">{t.detail}</th>
          </tr>
        </thead>
        <tbody>
          {response.layers.map((l) => (
            <tr key={l.layer} data-layer={layerName(l.layer)}>
              <th scope="row">{layerLabel(t, layerName(l.layer))}</th>
              <td>
                <Tag
                  tone={
                    l.status === LayerStatus.OK
                      ? 'ok'
                      : l.status === LayerStatus.UNAVAILABLE
                        ? 'warn'
                        : 'plain'
                  }
                >
                  {statusName(l.status)}
                </Tag>
              </td>
              <td className="mono">{l.share.toFixed(2)}</td>
              <td className="mono">{l.baseBudgetTokens}</td>
              <td className="mono">{l.budgetTokens}</td>
              <td className="mono">{l.usedTokens}</td>
              <td className="mono">{l.itemsIncluded}</td>
              <td className="mono">{l.itemsDropped}</td>
              <td className="muted">{l.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

function TraceRow({ item, t }: { readonly item: TraceItem; readonly t: ContextText }) {
  const link = traceLink(item.id);
  return (
    <tr
      className="ctx-trace-item"
      data-included={item.included}
      data-id={item.id}
      data-reason={reasonName(item.reason)}
    >
      <td>
        <Tag tone={item.included ? 'ok' : 'warn'}>{item.included ? t.included : t.dropped}</Tag>
      </td>
      <td className="mono">{traceKindName(item.kind)}</td>
      <td className="mono ctx-id">
        {link !== undefined ? <a href={routeHash(link.view, link.rest, link.query)}>{item.id}</a> : item.id}
        {item.injectionSuspected ? (
          <>
            {' '}
            <Tag tone="warn">
              {t.injection}: {item.injectionPatterns.join(', ')}
            </Tag>
          </>
        ) : null}
      </td>
      <td className="mono">{item.tokens}</td>
      <td className="mono">{item.score !== undefined ? formatScore(item.score) : ''}</td>
      <td className="mono">{item.confidence !== undefined ? formatScore(item.confidence) : ''}</td>
      <td className="mono">{reasonName(item.reason)}</td>
      <td className="muted ctx-detail">{item.detail}</td>
    </tr>
  );
}

/** Every candidate, by layer: what was included and what was dropped, with the reason. */
function Trace({ response, t }: { readonly response: BuildContextResponse; readonly t: ContextText }) {
  const counts = traceCounts(response.trace);
  const groups = groupTrace(response.trace);
  return (
    <Section
      title={t.trace}
      id="ctx-trace"
      actions={
        <span className="muted" data-testid="ctx-trace-counts">
          {t.traceSummary(counts.included, counts.dropped)}
        </span>
      }
    >
      {groups.length === 0 ? <p className="muted">{t.noTrace}</p> : null}
      {groups.map((g) => (
        <table key={g.layer} className="ctx-trace" data-layer={layerName(g.layer)}>
          <caption>
            <strong>{layerLabel(t, layerName(g.layer))}</strong>{' '}
            <span className="muted">{t.traceSummary(g.included.length, g.dropped.length)}</span>
          </caption>
          <thead>
            <tr>
              <th scope="col">
                <span className="sr-only">{t.status}</span>
              </th>
              <th scope="col">{t.kind}</th>
              <th scope="col">{t.item}</th>
              <th scope="col">{t.used}</th>
              <th scope="col">{t.score}</th>
              <th scope="col">{t.confidence}</th>
              <th scope="col">{t.reason}</th>
              <th scope="col">{t.detail}</th>
            </tr>
          </thead>
          <tbody>
            {[...g.included, ...g.dropped].map((item) => (
              <TraceRow key={item.id} item={item} t={t} />
            ))}
          </tbody>
        </table>
      ))}
    </Section>
  );
}

function Facts({ response, t }: { readonly response: BuildContextResponse; readonly t: ContextText }) {
  const tk = response.tokenizer;
  const stats = response.knowledgeSearchStats;
  const rows: [string, string][] = [
    [
      t.tokenizer,
      tk !== undefined
        ? `${tk.model !== '' ? `${tk.model} · ` : ''}${tk.encoding}${tk.approximate ? ` (${t.approximate} × ${tk.safetyFactor.toFixed(2)})` : ''}`
        : '—',
    ],
    [t.compaction, response.compactionRecommended ? t.compactionRecommended : t.compactionNotNeeded],
    [
      t.uncompacted,
      t.uncompactedValue(Number(response.uncompactedMessageCount), Number(response.uncompactedTokens)),
    ],
    [t.stateVersion, `${String(response.stateVersion)} / ${String(response.lastSequence)}`],
  ];
  if (stats !== undefined) {
    rows.push([
      t.knowledgeStats,
      `${t.knowledgeStatsValue(stats.lexicalCandidates, stats.denseCandidates, stats.mergedCandidates)}${stats.degraded ? ` · ${t.degraded}` : ''}`,
    ]);
  }
  return <KeyValues rows={rows} />;
}

/** A BuildContext response: the messages, tokens per layer and the trace. */
export function ContextResult({ response }: { readonly response: BuildContextResponse }) {
  const t = useMessages(contextText);
  return (
    <div className="ctx-result">
      <Facts response={response} t={t} />
      <Usage response={response} t={t} />
      <Messages response={response} t={t} />
      <Trace response={response} t={t} />
    </div>
  );
}
