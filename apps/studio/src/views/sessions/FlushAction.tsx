import { useMutation } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { BoundaryReason, IngestionService, MemCellStatus } from '@engram/contracts/ingestion';
import { ErrorNotice, Tag } from '../../components/ui.js';
import { enumName } from '../../lib/format.js';
import { useMessages } from '../../lib/i18n.js';
import { sessionsText } from './text.js';

/** "Flush": closes the open tail into a MemCell, waits for its extraction and says what happened. */
export function FlushAction({ name, active }: { readonly name: string; readonly active: boolean }) {
  const t = useMessages(sessionsText);
  const queryClient = useQueryClient();
  const flush = useMutation(IngestionService.method.flushSession, {
    onSettled: () => queryClient.invalidateQueries(),
  });
  const cell = flush.data?.memCell;
  return (
    <div className="flush" data-testid="flush">
      <div className="row">
        <button
          type="button"
          className="primary"
          disabled={!active || flush.isPending}
          onClick={() =>
            flush.mutate({
              name,
              reason: 'flushed from Engram Studio',
              waitForExtraction: true,
              extractionWaitTimeout: { seconds: 30n },
            })
          }
        >
          {t.flush}
        </button>
        <span className="muted">{flush.isPending ? t.flushing : t.flushHint}</span>
      </div>
      <ErrorNotice error={flush.error} />
      {flush.isSuccess ? (
        <p role="status" className="flush-result">
          {cell === undefined ? (
            t.flushNothing
          ) : (
            <>
              {t.flushDone(Number(cell.firstSequence), Number(cell.lastSequence))}{' '}
              <Tag tone="info">{enumName(BoundaryReason, cell.boundaryReason)}</Tag>{' '}
              <Tag
                tone={
                  cell.status === MemCellStatus.EXTRACTED
                    ? 'ok'
                    : cell.status === MemCellStatus.FAILED
                      ? 'warn'
                      : 'plain'
                }
              >
                {enumName(MemCellStatus, cell.status)}
              </Tag>
            </>
          )}
        </p>
      ) : null}
    </div>
  );
}
