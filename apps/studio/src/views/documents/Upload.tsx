import { createConnectQueryKey, skipToken, useMutation, useQuery } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import { DocumentState, IngestionService, type Document } from '@engram/contracts/ingestion';
import { ErrorNotice, Tag } from '../../components/ui.js';
import { enumName, formatBytes } from '../../lib/format.js';
import { defineMessages, useMessages } from '../../lib/i18n.js';
import { routeHash } from '../../lib/route.js';
import {
  MAX_UNARY_BYTES,
  SUPPORTED_MIME_TYPES,
  displayNameOf,
  fileProblem,
  inferMimeType,
  serverDone,
  stateTone,
  stepProgress,
  uploadStep,
  type SupportedMimeType,
  type UploadPhase,
} from './model.js';
import { UploadSteps } from './UploadSteps.js';

const text = defineMessages({
  en: {
    file: 'File',
    mimeType: 'Send as',
    pick: 'choose a type',
    upload: 'Upload',
    limit: (max: string) => `Markdown, plain text or HTML, up to ${max} from the browser.`,
    empty: 'The file is empty: there is nothing to ingest.',
    tooLarge: (size: string, max: string) =>
      `This file is ${size}: the browser sends at most ${max} in one call (DOCUMENT_TOO_LARGE). Stream it from a terminal instead:`,
    unknownType: 'The type of this file is not recognised: choose how to send it.',
    dedup: 'Identical content was already ingested: this is that document.',
    open: 'Open the document',
  },
  zh: {
    file: '文件',
    mimeType: '发送类型',
    pick: '选择类型',
    upload: '上传',
    limit: (max: string) => `Markdown、纯文本或 HTML，浏览器上传最多 ${max}。`,
    empty: '文件是空的，没有可导入的内容。',
    tooLarge: (size: string, max: string) =>
      `此文件大小为 ${size}：浏览器一次调用最多发送 ${max}（DOCUMENT_TOO_LARGE）。请在终端中以流式上传：`,
    unknownType: '无法识别此文件的类型，请选择发送方式。',
    dedup: '相同内容已导入过：这就是那份文档。',
    open: '打开文档',
  },
});

/** Reads `file` into bytes, reporting progress (FileReader is the one step the page can measure). */
function readFile(file: File, onProgress: (loaded: number, total: number) => void): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    reader.onload = () => resolve(new Uint8Array(reader.result as ArrayBuffer));
    reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'));
    reader.readAsArrayBuffer(file);
  });
}

type ServerState = 'INGESTING' | 'READY' | 'FAILED' | 'OTHER';
function serverState(state: DocumentState): ServerState {
  if (state === DocumentState.INGESTING) return 'INGESTING';
  if (state === DocumentState.READY) return 'READY';
  if (state === DocumentState.FAILED) return 'FAILED';
  return 'OTHER';
}

function serverPhase(document: Document, deduplicated: boolean): UploadPhase {
  const state = serverState(document.state);
  return {
    kind: 'server',
    name: document.name,
    state: state === 'OTHER' ? 'INGESTING' : state,
    chunkCount: document.chunkCount,
    indexedChunkCount: document.indexedChunkCount,
    deduplicated,
    bytes: Number(document.sizeBytes),
  };
}

/** Polls GetDocument while the uploaded document is not READY with every chunk indexed. */
function usePolledDocument(name: string | undefined) {
  return useQuery(IngestionService.method.getDocument, name === undefined ? skipToken : { name }, {
    staleTime: 0,
    enabled: name !== undefined,
    refetchInterval: (query) => {
      const d = query.state.data?.document;
      if (name === undefined) return false;
      if (query.state.error !== null || query.state.dataUpdateCount > 600) return false;
      return d !== undefined && serverDone(serverState(d.state), d.chunkCount, d.indexedChunkCount)
        ? false
        : 500;
    },
  });
}

export function Upload() {
  const t = useMessages(text);
  const queryClient = useQueryClient();
  const [file, setFile] = useState<File | undefined>();
  const [mime, setMime] = useState<SupportedMimeType | ''>('');
  const [phase, setPhase] = useState<UploadPhase>({ kind: 'idle' });
  const [deduplicated, setDeduplicated] = useState(false);
  const ingest = useMutation(IngestionService.method.ingestDocument);
  const uploadedName = phase.kind === 'server' ? phase.name : undefined;
  const polled = usePolledDocument(uploadedName);
  const shown: UploadPhase =
    polled.data?.document !== undefined ? serverPhase(polled.data.document, deduplicated) : phase;
  const problem = file !== undefined ? fileProblem(file.size) : undefined;
  const busy = phase.kind === 'reading' || phase.kind === 'sending';

  const onFile = (picked: File | undefined) => {
    setFile(picked);
    setPhase({ kind: 'idle' });
    setMime(picked !== undefined ? (inferMimeType(picked.name, picked.type) ?? '') : '');
  };
  const onSubmit = async (e: SyntheticEvent) => {
    e.preventDefault();
    if (file === undefined || problem !== undefined || mime === '') return;
    try {
      setPhase({ kind: 'reading', loaded: 0, total: file.size });
      const content = await readFile(file, (loaded, total) => setPhase({ kind: 'reading', loaded, total }));
      setPhase({ kind: 'sending', bytes: content.byteLength });
      const answer = await ingest.mutateAsync({
        document: { displayName: displayNameOf(file.name), mimeType: mime, sourceUri: file.name },
        content,
        requestId: crypto.randomUUID(),
      });
      const document = answer.document;
      if (document === undefined) throw new Error('the server returned no document');
      setDeduplicated(answer.deduplicated);
      setPhase(serverPhase(document, answer.deduplicated));
      await queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({
          schema: IngestionService.method.listDocuments,
          cardinality: undefined,
        }),
      });
    } catch (error) {
      setPhase({ kind: 'failed', error });
    }
  };
  const step = uploadStep(shown);
  const finished = step === 'done';
  const doc = polled.data?.document;
  return (
    <form className="upload" onSubmit={(e) => void onSubmit(e)} data-phase={step ?? shown.kind}>
      <p className="muted">{t.limit(formatBytes(MAX_UNARY_BYTES))}</p>
      <div className="row">
        <label>
          {t.file}{' '}
          <input
            type="file"
            name="document"
            accept=".md,.markdown,.txt,.text,.html,.htm,text/markdown,text/plain,text/html"
            disabled={busy}
            onChange={(e) => onFile(e.target.files?.[0])}
          />
        </label>
        <label>
          {t.mimeType}{' '}
          <select
            name="mimeType"
            value={mime}
            disabled={busy}
            onChange={(e) => setMime(e.target.value as SupportedMimeType | '')}
          >
            <option value="">{t.pick}</option>
            {SUPPORTED_MIME_TYPES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <button
          type="submit"
          className="primary"
          disabled={file === undefined || problem !== undefined || mime === '' || busy}
        >
          {t.upload}
        </button>
      </div>
      {file !== undefined && problem === 'empty' ? <p className="error">{t.empty}</p> : null}
      {file !== undefined && problem === 'tooLarge' ? (
        <div className="error" data-reason="DOCUMENT_TOO_LARGE">
          {t.tooLarge(formatBytes(file.size), formatBytes(MAX_UNARY_BYTES))}{' '}
          <code>npx engram ingest {file.name}</code>
        </div>
      ) : null}
      {file !== undefined && problem === undefined && mime === '' ? (
        <p className="muted">{t.unknownType}</p>
      ) : null}
      {shown.kind !== 'idle' ? (
        <UploadSteps phase={shown} step={step} progress={stepProgress(shown)} />
      ) : null}
      {shown.kind === 'failed' ? <ErrorNotice error={shown.error} /> : null}
      <ErrorNotice error={polled.error} />
      {shown.kind === 'server' && shown.deduplicated ? <p className="muted">{t.dedup}</p> : null}
      {finished && doc !== undefined ? (
        <p className="row">
          <Tag tone={stateTone(enumName(DocumentState, doc.state))}>{enumName(DocumentState, doc.state)}</Tag>
          <a href={routeHash('documents', [doc.name.slice(doc.name.indexOf('/') + 1)])}>{t.open}</a>
        </p>
      ) : null}
    </form>
  );
}
