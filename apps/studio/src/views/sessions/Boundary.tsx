import { ErrorReason } from '@engram/contracts/common';
import type { ExtractionJob } from '@engram/contracts/governance';
import { BoundaryReason, MemCellStatus, type MemCell } from '@engram/contracts/ingestion';
import { Empty, Tag } from '../../components/ui.js';
import { enumName, formatTime, shortName } from '../../lib/format.js';
import { useLang, useMessages } from '../../lib/i18n.js';
import { ExtractionJobCard } from './ExtractionJobCard.js';
import { sessionsText } from './text.js';

const STATUS_TONE: Record<number, string> = {
  [MemCellStatus.EXTRACTED]: 'ok',
  [MemCellStatus.FAILED]: 'warn',
  [MemCellStatus.EXTRACTING]: 'info',
};

/** The line drawn after a MemCell's last message: why it closed, its extraction, its jobs. */
export function Boundary({
  cell,
  jobs,
}: {
  readonly cell: MemCell;
  readonly jobs: readonly ExtractionJob[];
}) {
  const t = useMessages(sessionsText);
  const { lang } = useLang();
  return (
    <li className="boundary mem-cell-boundary" data-mem-cell={cell.name} data-testid="boundary">
      <div className="boundary-head">
        <strong>{t.boundary}</strong>
        <Tag tone="info">
          <span data-testid="boundary-reason">{enumName(BoundaryReason, cell.boundaryReason)}</span>
        </Tag>
        <span>{t.messagesRange(Number(cell.firstSequence), Number(cell.lastSequence))}</span>
        <Tag tone={STATUS_TONE[cell.status] ?? 'plain'}>{enumName(MemCellStatus, cell.status)}</Tag>
        <span className="muted">
          {cell.attempts} {t.attempts} · {cell.tokenCount} {t.tokens} · {formatTime(cell.closeTime, lang)}
        </span>
        <span className="muted mono small">{shortName(cell.name)}</span>
      </div>
      {cell.boundaryNote !== '' ? (
        <div className="boundary-note">
          {t.note}: <span className="note-text">{cell.boundaryNote}</span>
        </div>
      ) : null}
      {cell.lastErrorReason !== ErrorReason.UNSPECIFIED ? (
        <div className="error">
          <code>{enumName(ErrorReason, cell.lastErrorReason)}</code> {cell.lastErrorMessage}
        </div>
      ) : null}
      <details className="jobs" open={jobs.length > 0}>
        <summary>
          {t.jobs} ({jobs.length})
        </summary>
        {jobs.length === 0 ? <Empty>{t.noJobs}</Empty> : null}
        {jobs.map((job) => (
          <ExtractionJobCard key={job.name} job={job} latest={job.name === cell.extractionJob} />
        ))}
      </details>
    </li>
  );
}
