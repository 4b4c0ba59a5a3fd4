import { Code } from '@connectrpc/connect';
import { EngramError } from './errors.js';

/**
 * A document's content: bytes, text (sent as UTF-8), a `Blob` or `File`, a web `ReadableStream`,
 * or any async iterable of bytes (a Node `fs.createReadStream(path)`).
 */
export type IngestContent =
  Uint8Array | string | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** The content's size in bytes when it is known without reading it. */
export function knownSize(content: IngestContent): number | undefined {
  if (content instanceof Uint8Array) return content.byteLength;
  if (typeof content === 'string') return new TextEncoder().encode(content).byteLength;
  if (isBlob(content)) return content.size;
  return undefined;
}

function isBlob(content: IngestContent): content is Blob {
  return typeof Blob !== 'undefined' && content instanceof Blob;
}

function isReadableStream(content: IngestContent): content is ReadableStream<Uint8Array> {
  return typeof (content as Partial<ReadableStream>).getReader === 'function';
}

/** A web stream read chunk by chunk (Safari's streams are not async iterable). */
async function* readStream(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array, void, undefined> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** The content's chunks as they come, whatever its form. */
async function* chunksOf(content: IngestContent): AsyncGenerator<Uint8Array, void, undefined> {
  if (content instanceof Uint8Array) yield content;
  else if (typeof content === 'string') yield new TextEncoder().encode(content);
  else if (isBlob(content)) yield* readStream(content.stream());
  else if (isReadableStream(content)) yield* readStream(content);
  else {
    for await (const chunk of content as AsyncIterable<unknown>) {
      if (typeof chunk === 'string') yield new TextEncoder().encode(chunk);
      else if (chunk instanceof Uint8Array) yield chunk;
      else {
        throw new EngramError({
          code: Code.InvalidArgument,
          message: `document content must yield bytes (Uint8Array) or strings, got ${typeof chunk}`,
        });
      }
    }
  }
}

/** The content in parts of at most `partBytes` bytes (the server takes at most 1 MiB per part). */
export async function* partsOf(
  content: IngestContent,
  partBytes: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  for await (const chunk of chunksOf(content)) {
    for (let offset = 0; offset < chunk.byteLength; offset += partBytes) {
      yield chunk.subarray(offset, Math.min(chunk.byteLength, offset + partBytes));
    }
  }
}

/**
 * The whole content in one buffer, refused with RESOURCE_EXHAUSTED `DOCUMENT_TOO_LARGE` (metadata
 * `limit_bytes`, as the server would) as soon as it passes `limitBytes`, before anything is sent.
 */
export async function collect(content: IngestContent, limitBytes: number, hint: string): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const part of partsOf(content, limitBytes + 1)) {
    total += part.byteLength;
    if (total > limitBytes) {
      throw new EngramError({
        code: Code.ResourceExhausted,
        reason: 'DOCUMENT_TOO_LARGE',
        message: `the document is over ${String(limitBytes)} bytes, the limit of a single-request ingestion; ${hint}`,
        metadata: { limit_bytes: String(limitBytes) },
      });
    }
    parts.push(part);
  }
  const whole = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    whole.set(part, offset);
    offset += part.byteLength;
  }
  return whole;
}
