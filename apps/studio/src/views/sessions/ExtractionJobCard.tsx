import { ErrorReason } from '@engram/contracts/common';
import {
  DecisionOutcome,
  ExtractionJobState,
  Extractor,
  ExtractorRunState,
  MemoryType,
  type CandidateMemory,
  type Decision,
  type ExtractionJob,
} from '@engram/contracts/governance';
import { RuleTrace } from '../../components/RuleTrace.js';
import { Empty, Tag } from '../../components/ui.js';
import { enumName, formatScore, formatTime, shortName } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import { candidateRows, outcomeTone } from './model.js';
import { sessionsText } from './text.js';

const STATE_TONE: Record<number, string> = {
  [ExtractionJobState.SUCCEEDED]: 'ok',
  [ExtractionJobState.FAILED]: 'warn',
  [ExtractionJobState.RUNNING]: 'info',
};

/** A candidate's text; a FACT without text as `namespace.key = value`. */
function candidateText(c: CandidateMemory): string {
  if (c.text !== '') return c.text;
  const value = c.value === undefined ? '' : JSON.stringify(c.value);
  return `${c.namespace}.${c.key} = ${value}`;
}

function DecisionCell({ decision }: { readonly decision: Decision | undefined }) {
  const t = useMessages(sessionsText);
  if (decision === undefined) return <td>—</td>;
  const outcome = enumName(DecisionOutcome, decision.outcome);
  const memory = decision.memory?.name ?? '';
  return (
    <td>
      <Tag tone={outcomeTone(outcome)}>
        <span data-testid="decision-outcome">{outcome}</span>
      </Tag>{' '}
      <code data-testid="decision-rule">{decision.rule}</code>
      <div className="decision-reason">{decision.reason}</div>
      {memory !== '' ? (
        <div>
          {t.memory}: <a href={routeHash('memories', [shortName(memory)])}>{shortName(memory)}</a>
        </div>
      ) : null}
      <RuleTrace decision={decision} />
    </td>
  );
}

/** One extraction job of a MemCell: state, extractor runs, counts, and each candidate's decision. */
export function ExtractionJobCard({
  job,
  latest,
}: {
  readonly job: ExtractionJob;
  readonly latest: boolean;
}) {
  const t = useMessages(sessionsText);
  const { lang } = useLang();
  const rows = candidateRows(job.candidates, job.decisions);
  const counts = job.decisionCounts;
  return (
    <div className="job" data-job={job.name} data-testid="extraction-job">
      <div className="job-head">
        <Tag tone={STATE_TONE[job.state] ?? 'plain'}>{enumName(ExtractionJobState, job.state)}</Tag>
        <span className="mono small">{shortName(job.name)}</span>
        {latest ? <Tag tone="info">{t.latest}</Tag> : null}
        {job.dryRun ? <Tag>{t.dryRun}</Tag> : null}
        <span className="muted">{formatTime(job.endTime ?? job.createTime, lang)}</span>
        {counts !== undefined ? (
          <span className="muted">
            ✓{counts.accepted + counts.superseded} · ≡{counts.mergedDuplicate} · ✗{counts.rejected} · ⚑
            {counts.quarantined}
          </span>
        ) : null}
      </div>
      <div className="muted small">
        {t.extractors}:{' '}
        {job.extractorRuns
          .map(
            (r) =>
              `${enumName(Extractor, r.extractor)} ${enumName(ExtractorRunState, r.state)} (${String(r.candidateCount)})`,
          )
          .join(' · ')}
      </div>
      {job.error !== undefined ? (
        <div className="error">
          {t.jobError}: <code>{enumName(ErrorReason, job.error.reason)}</code> {job.error.message}
        </div>
      ) : null}
      {rows.length === 0 ? (
        <Empty>{t.noCandidates}</Empty>
      ) : (
        <table className="candidates">
          <caption className="sr-only">{t.candidates}</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">{t.type}</th>
              <th scope="col">{t.candidate}</th>
              <th scope="col">{t.confidence}</th>
              <th scope="col">{t.decision}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.index} data-testid="candidate">
                <td className="num">{row.index}</td>
                <td>{row.candidate !== undefined ? enumName(MemoryType, row.candidate.type) : '—'}</td>
                <td className="candidate-text" data-testid="candidate-text">
                  {row.candidate !== undefined ? (
                    candidateText(row.candidate)
                  ) : (
                    <em className="muted">{t.hiddenCandidate}</em>
                  )}
                </td>
                <td className="num">
                  {row.candidate?.confidence !== undefined ? formatScore(row.candidate.confidence) : '—'}
                </td>
                <DecisionCell decision={row.decision} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
