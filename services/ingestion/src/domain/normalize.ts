import { createHash } from 'node:crypto';
import { errors } from '@engram/runtime';
import { htmlToText } from './html-text.js';

/** The media types ingestion understands. */
export const MEDIA_TYPES = ['text/plain', 'text/markdown', 'text/html'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];

/** `text/markdown; charset=utf-8` → `text/markdown`; anything unsupported → MEDIA_TYPE_UNSUPPORTED. */
export function parseMediaType(raw: string): MediaType {
  if (raw.trim() === '') throw errors.fieldRequired('document.mime_type');
  const type = raw.split(';')[0]?.trim().toLowerCase() ?? '';
  const known = MEDIA_TYPES.find((t) => t === type);
  if (known === undefined) {
    throw errors.invalidArgument('MEDIA_TYPE_UNSUPPORTED', `media type "${type}" is not supported`, {
      mime_type: type.slice(0, 128),
      supported: MEDIA_TYPES.join(','),
    });
  }
  return known;
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * The normalized text of uploaded bytes (document.proto, "Normalized text"): strict UTF-8 without a
 * byte-order mark and without U+0000; CRLF and CR become LF; NFC; for HTML the visible text.
 * Content without a non-whitespace character is FIELD_REQUIRED.
 */
export function normalizeContent(bytes: Uint8Array, mediaType: MediaType): string {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw errors.fieldInvalid('content', 'not valid UTF-8');
  }
  if (text.includes('\u0000')) throw errors.fieldInvalid('content', 'contains U+0000');
  text = text.replace(/\r\n?/g, '\n').normalize('NFC');
  if (mediaType === 'text/html') text = htmlToText(text).normalize('NFC');
  if (text.trim() === '') throw errors.fieldRequired('content');
  return text;
}

/** SHA-256 of the text as UTF-8, lower-case hex: the dedupe key of a document. */
export function contentHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Length in Unicode code points (what every offset and size of the API counts). */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}
