import { extname } from 'node:path';

/** MIME types the server ingests, by file extension (lower-cased, with the dot). */
export const MIME_TYPES: Readonly<Record<string, string>> = {
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.html': 'text/html',
  '.htm': 'text/html',
};

/** The MIME type of a file by its extension, or undefined for files the server does not ingest. */
export function mimeTypeOf(path: string): string | undefined {
  return MIME_TYPES[extname(path).toLowerCase()];
}
