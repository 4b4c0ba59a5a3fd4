import { formatBytes } from '../../lib/format.js';
import { defineMessages, useMessages } from '../../lib/i18n.js';
import { UPLOAD_STEPS, type UploadPhase, type UploadStep } from './model.js';

const text = defineMessages({
  en: {
    phases: 'Upload phases',
    reading: 'Reading the file',
    sending: 'Sending (the server chunks and writes it in the same call)',
    indexing: 'Indexing (the server’s indexer makes the chunks searchable)',
    done: 'Done',
    read: (loaded: string, total: string) => `${loaded} of ${total}`,
    readDone: (size: string) => `${size} read`,
    sent: (size: string) => `${size} sent; the browser cannot report upload progress`,
    written: (chunks: number) => `${String(chunks)} chunk${chunks === 1 ? '' : 's'} written`,
    indexed: (indexed: number, total: number) => `${String(indexed)} of ${String(total)} chunks indexed`,
    state: (state: string) => `state ${state}`,
  },
  zh: {
    phases: '上传阶段',
    reading: '读取文件',
    sending: '发送（服务器在同一次调用中分块并写入）',
    indexing: '索引（服务器的索引器使分块可被检索）',
    done: '完成',
    read: (loaded: string, total: string) => `${loaded} / ${total}`,
    readDone: (size: string) => `已读取 ${size}`,
    sent: (size: string) => `已发送 ${size}；浏览器无法报告上传进度`,
    written: (chunks: number) => `已写入 ${String(chunks)} 个分块`,
    indexed: (indexed: number, total: number) => `已索引 ${String(indexed)} / ${String(total)} 个分块`,
    state: (state: string) => `状态 ${state}`,
  },
});

type Status = 'done' | 'current' | 'todo' | 'failed';

function statusOf(step: UploadStep, current: UploadStep | undefined, failed: boolean): Status {
  const at = current === undefined ? -1 : UPLOAD_STEPS.indexOf(current);
  const index = UPLOAD_STEPS.indexOf(step);
  if (current === 'done' && step === 'done') return failed ? 'failed' : 'done';
  if (index < at) return 'done';
  if (index === at) return 'current';
  return 'todo';
}

/** The upload's steps as an ordered list: done, current (with a progress bar when measurable), to do. */
export function UploadSteps({
  phase,
  step,
  progress,
}: {
  readonly phase: UploadPhase;
  readonly step: UploadStep | undefined;
  readonly progress: number | undefined;
}) {
  const t = useMessages(text);
  const failed = phase.kind === 'server' && phase.state === 'FAILED';
  const detail = (s: UploadStep): string | undefined => {
    if (s === 'reading' && phase.kind === 'reading')
      return t.read(formatBytes(phase.loaded), formatBytes(phase.total));
    if (s === 'reading' && phase.kind === 'sending') return t.readDone(formatBytes(phase.bytes));
    if (s === 'reading' && phase.kind === 'server') return t.readDone(formatBytes(phase.bytes));
    if (s === 'sending' && phase.kind === 'server') return t.written(phase.chunkCount);
    if (s === 'sending' && phase.kind === 'sending') return t.sent(formatBytes(phase.bytes));
    if (s === 'indexing' && phase.kind === 'server' && phase.state === 'READY')
      return t.indexed(phase.indexedChunkCount, phase.chunkCount);
    if (s === 'done' && phase.kind === 'server' && step === 'done') return t.state(phase.state);
    return undefined;
  };
  return (
    <ol className="upload-steps" aria-label={t.phases}>
      {UPLOAD_STEPS.map((s) => {
        const status = statusOf(s, step, failed);
        const d = detail(s);
        return (
          <li
            key={s}
            data-step={s}
            data-status={status}
            aria-current={status === 'current' ? 'step' : undefined}
          >
            <span className="step-mark" aria-hidden="true">
              {status === 'done' ? '✓' : status === 'failed' ? '✗' : status === 'current' ? '…' : '○'}
            </span>{' '}
            <span className="step-name">{t[s]}</span>
            {d !== undefined ? <span className="muted"> — {d}</span> : null}
            {status === 'current' && progress !== undefined ? (
              <progress className="progress" max={1} value={progress} />
            ) : status === 'current' ? (
              <progress className="progress" />
            ) : null}
          </li>
        );
      })}
    </ol>
  );
}
