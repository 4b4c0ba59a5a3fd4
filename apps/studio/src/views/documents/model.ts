/**
 * Pure logic of the Documents view: which media type a file is sent as, whether it fits the
 * unary upload, and how far an upload has come.
 *
 * Why the unary IngestDocument and not StreamIngestDocument: the streaming RPC needs the client
 * to stream its request (bidi), and a browser cannot — fetch has no request-body streaming over
 * HTTP/1.1, which is what the Studio's Connect transport speaks. So the page sends the whole file
 * in one IngestDocument call (content up to 4 MiB) and reports only what it can honestly know:
 * reading the file (FileReader progress), sending it (no upload progress from fetch), and then the
 * document's state as the server reports it (GetDocument polled until every chunk is indexed).
 * Bigger files are for `npx engram ingest`, which streams them.
 */

/** The largest content IngestDocument accepts: 4 MiB (4,194,304 bytes). */
export const MAX_UNARY_BYTES = 4 * 1024 * 1024;

/** The media types ingestion supports (Document.mime_type). */
export const SUPPORTED_MIME_TYPES = ['text/markdown', 'text/plain', 'text/html'] as const;
export type SupportedMimeType = (typeof SUPPORTED_MIME_TYPES)[number];

const BY_EXTENSION: Readonly<Record<string, SupportedMimeType>> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  mdown: 'text/markdown',
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  csv: 'text/plain',
  html: 'text/html',
  htm: 'text/html',
};

/**
 * The media type to send a file as: by its extension first (browsers often report `.md` files as
 * `''` or `application/octet-stream`), else the browser's type when it is supported, else
 * undefined (the user picks one).
 */
export function inferMimeType(fileName: string, browserType: string): SupportedMimeType | undefined {
  const dot = fileName.lastIndexOf('.');
  const extension = dot >= 0 ? fileName.slice(dot + 1).toLowerCase() : '';
  const byExtension = BY_EXTENSION[extension];
  if (byExtension !== undefined) return byExtension;
  const base = browserType.split(';')[0]?.trim().toLowerCase() ?? '';
  return (SUPPORTED_MIME_TYPES as readonly string[]).includes(base) ? (base as SupportedMimeType) : undefined;
}

/** Why a file cannot be sent from the page, before anything is read. */
export type FileProblem = 'empty' | 'tooLarge';

/** Whether a file of `size` bytes can go through the unary upload. */
export function fileProblem(size: number): FileProblem | undefined {
  if (size <= 0) return 'empty';
  if (size > MAX_UNARY_BYTES) return 'tooLarge';
  return undefined;
}

/** Where an upload is. */
export type UploadPhase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'reading'; readonly loaded: number; readonly total: number }
  | { readonly kind: 'sending'; readonly bytes: number }
  | {
      readonly kind: 'server';
      readonly name: string;
      readonly state: 'INGESTING' | 'READY' | 'FAILED';
      readonly chunkCount: number;
      readonly indexedChunkCount: number;
      readonly deduplicated: boolean;
      /** The document's size as uploaded. */
      readonly bytes: number;
    }
  | { readonly kind: 'failed'; readonly error: unknown };

/** The steps shown to the user, in order. */
export const UPLOAD_STEPS = ['reading', 'sending', 'indexing', 'done'] as const;
export type UploadStep = (typeof UPLOAD_STEPS)[number];

/** The step an upload is at (undefined when idle or failed before the server answered). */
export function uploadStep(phase: UploadPhase): UploadStep | undefined {
  switch (phase.kind) {
    case 'reading':
      return 'reading';
    case 'sending':
      return 'sending';
    case 'server':
      if (phase.state === 'INGESTING') return 'sending';
      if (phase.state === 'FAILED') return 'done';
      return phase.indexedChunkCount >= phase.chunkCount ? 'done' : 'indexing';
    default:
      return undefined;
  }
}

/**
 * The share of the current step that is done, 0–1, or undefined when it cannot be known (the
 * browser reports no upload progress; chunking happens inside the call).
 */
export function stepProgress(phase: UploadPhase): number | undefined {
  switch (phase.kind) {
    case 'reading':
      return phase.total > 0 ? Math.min(1, phase.loaded / phase.total) : undefined;
    case 'server':
      if (phase.state !== 'READY') return undefined;
      return phase.chunkCount > 0 ? Math.min(1, phase.indexedChunkCount / phase.chunkCount) : 1;
    default:
      return undefined;
  }
}

/** Whether polling the document can stop: it FAILED, or it is READY with every chunk indexed. */
export function serverDone(
  state: 'INGESTING' | 'READY' | 'FAILED' | 'OTHER',
  chunks: number,
  indexed: number,
): boolean {
  return state === 'FAILED' || (state === 'READY' && indexed >= chunks);
}

/** The tag tone of a document state name. */
export function stateTone(state: string): 'ok' | 'warn' | 'info' | 'plain' {
  if (state === 'READY') return 'ok';
  if (state === 'FAILED') return 'warn';
  if (state === 'INGESTING') return 'info';
  return 'plain';
}

/** A heading path as one line (`Install › Linux`), or undefined when the chunk has none. */
export function headingTrail(path: readonly string[]): string | undefined {
  return path.length === 0 ? undefined : path.join(' › ');
}

/** The display name to send: the file name without its directory (the server's default is the first line). */
export function displayNameOf(fileName: string): string {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  return base.slice(0, 256);
}

/**
 * A chunk's text in its parts, counted in code points as the server counts them: the repeated
 * table header (not part of the chunk's range), the overlap with the previous chunk, and the
 * chunk's own new text.
 */
export function splitChunkText(
  text: string,
  headerPrefixChars: number,
  overlapPrefixChars: number,
): { readonly header: string; readonly overlap: string; readonly rest: string } {
  const points = Array.from(text);
  const header = Math.max(0, Math.min(points.length, headerPrefixChars));
  const overlap = Math.max(0, Math.min(points.length - header, overlapPrefixChars));
  return {
    header: points.slice(0, header).join(''),
    overlap: points.slice(header, header + overlap).join(''),
    rest: points.slice(header + overlap).join(''),
  };
}
