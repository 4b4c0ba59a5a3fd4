import { RuleVerdict, type Decision } from '@engram/contracts/governance';
import { enumName } from '../lib/format.js';
import { defineMessages, useMessages } from '../lib/i18n.js';
import { Tag } from './ui.js';

const text = defineMessages({
  en: { trace: 'Rule trace', rule: 'Rule', verdict: 'Verdict', note: 'Note' },
  zh: { trace: '规则轨迹', rule: '规则', verdict: '裁定', note: '说明' },
});

/** The tag colour of one rule's verdict in a trace. */
export function verdictTone(verdict: RuleVerdict): 'ok' | 'warn' | 'info' | 'plain' {
  switch (verdict) {
    case RuleVerdict.PASSED:
      return 'ok';
    case RuleVerdict.REJECTED:
    case RuleVerdict.QUARANTINED:
      return 'warn';
    case RuleVerdict.ADJUSTED:
    case RuleVerdict.DUPLICATE:
    case RuleVerdict.SUPERSEDES:
      return 'info';
    default:
      return 'plain';
  }
}

/**
 * Every rule governance evaluated for one decision, in order, with its verdict and note (folded
 * away until asked for). Shared by a memory's write decision and an extraction job's candidates.
 */
export function RuleTrace({ decision }: { readonly decision: Decision }) {
  const t = useMessages(text);
  if (decision.evaluations.length === 0) return null;
  return (
    <details className="rule-trace">
      <summary>{t.trace}</summary>
      <table>
        <thead>
          <tr>
            <th scope="col">{t.rule}</th>
            <th scope="col">{t.verdict}</th>
            <th scope="col">{t.note}</th>
          </tr>
        </thead>
        <tbody>
          {decision.evaluations.map((e, i) => (
            <tr key={`${e.rule}-${String(i)}`} data-verdict={enumName(RuleVerdict, e.verdict)}>
              <td>
                <code>{e.rule}</code>
              </td>
              <td>
                <Tag tone={verdictTone(e.verdict)}>{enumName(RuleVerdict, e.verdict)}</Tag>
              </td>
              <td>
                {e.note}
                {e.field !== '' ? <code> {e.field}</code> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
