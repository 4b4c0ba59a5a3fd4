/**
 * The free text a candidate carries, for the content rules (secrets, personal data, prompt
 * injection): reading every piece, and rewriting every piece.
 */
import type { JsonValue } from '@engram/store';
import type { Candidate } from '../candidate.js';
import { isJsonObject, type JsonObject } from './json.js';

/**
 * Where a piece of content sits (proto field paths): `namespace` and `key` (a FACT's slot),
 * `text`, `value` (any string, number or object key inside it, and each key–value pair as
 * `key: value`), `evidence.excerpt`, `metadata` (keys, values and `key: value` pairs), `ttl_reason`.
 */
export type ContentField =
  'namespace' | 'key' | 'text' | 'value' | 'evidence.excerpt' | 'metadata' | 'ttl_reason';

/** The fields in the order notes list them. */
export const CONTENT_FIELDS: readonly ContentField[] = [
  'namespace',
  'key',
  'text',
  'value',
  'evidence.excerpt',
  'metadata',
  'ttl_reason',
];

/** One piece of content and its field. */
export interface ContentPiece {
  readonly field: ContentField;
  readonly text: string;
}

/** `key: value` — how a detector reads a labelled value; `{"password": "x"}` is `password: x`. */
export function pairText(key: string, value: string): string {
  return `${key}: ${value}`;
}

/**
 * The strings of a value: every string, number and key, and every key–value pair as text, so that
 * a label and its value are read together (`label` is the key the value sits under: the
 * object's key, or the FACT's own key for the top-level value).
 */
function valuePieces(value: JsonValue, out: string[], label?: string): void {
  if (typeof value === 'string' || typeof value === 'number') {
    const text = String(value);
    out.push(text);
    if (label !== undefined && label !== '') out.push(pairText(label, text));
  } else if (Array.isArray(value)) for (const inner of value) valuePieces(inner, out, label);
  else if (isJsonObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      out.push(key);
      valuePieces(inner, out, key);
    }
  }
}

/**
 * Every piece of content of the candidate. `fields` limits which fields are read (default all).
 * Numbers in the value are read as their decimal text, so a card number stored as a JSON number
 * is found too.
 */
export function contentPieces(
  candidate: Candidate,
  fields: readonly ContentField[] = CONTENT_FIELDS,
): ContentPiece[] {
  const pieces: ContentPiece[] = [];
  const add = (field: ContentField, text: string | undefined) => {
    if (text !== undefined && text !== '' && fields.includes(field)) pieces.push({ field, text });
  };
  add('namespace', candidate.namespace);
  add('key', candidate.key);
  if (candidate.namespace !== undefined && candidate.key !== undefined) {
    add('key', pairText(candidate.namespace, candidate.key));
  }
  add('text', candidate.text);
  if (candidate.value !== undefined && fields.includes('value')) {
    const values: string[] = [];
    valuePieces(candidate.value, values, candidate.key);
    for (const text of values) add('value', text);
  }
  add('evidence.excerpt', candidate.evidence.excerpt);
  for (const [key, text] of Object.entries(candidate.metadata ?? {})) {
    add('metadata', key);
    add('metadata', text);
    if (text !== '') add('metadata', pairText(key, text));
  }
  add('ttl_reason', candidate.ttlReason);
  return pieces;
}

/** Rewrites one piece of content; returns it unchanged when there is nothing to do. */
export type ContentRewrite = (text: string, field: ContentField) => string;

/** A unique key: `key`, or `key (2)`, `key (3)`, … when a rewrite made two keys equal. */
function uniqueKey(key: string, taken: ReadonlySet<string>): string {
  if (!taken.has(key)) return key;
  for (let n = 2; ; n++) if (!taken.has(`${key} (${n})`)) return `${key} (${n})`;
}

/**
 * A value rewritten under its label: the pair `label: value` is rewritten, and when only the
 * value's part of it changed, that part is the new value (so `{"password": "x"}` loses `x`
 * although `x` alone holds nothing); otherwise the value is rewritten alone.
 */
export function rewriteLabelled(
  text: string,
  label: string | undefined,
  rewrite: (text: string) => string,
): string {
  const alone = rewrite(text);
  if (label === undefined || label === '') return alone;
  const prefix = pairText(label, '');
  const pair = rewrite(pairText(label, alone));
  return pair.startsWith(prefix) ? pair.slice(prefix.length) : alone;
}

function rewriteValue(value: JsonValue, rewrite: (text: string) => string, label?: string): JsonValue {
  if (typeof value === 'string') return rewriteLabelled(value, label, rewrite);
  if (typeof value === 'number') {
    const text = String(value);
    const rewritten = rewriteLabelled(text, label, rewrite);
    return rewritten === text ? value : rewritten;
  }
  if (Array.isArray(value)) return value.map((inner) => rewriteValue(inner, rewrite, label));
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const [key, inner] of Object.entries(value)) {
      out[uniqueKey(rewrite(key), new Set(Object.keys(out)))] = rewriteValue(inner, rewrite, key);
    }
    return out;
  }
  return value;
}

/** The candidate with every piece of content of `fields` passed through `rewrite`. */
export function rewriteContent(
  candidate: Candidate,
  rewrite: ContentRewrite,
  fields: readonly ContentField[] = CONTENT_FIELDS,
): Candidate {
  const on = (field: ContentField) => fields.includes(field);
  const metadata = candidate.metadata;
  const excerpt = candidate.evidence.excerpt;
  let rewrittenMetadata: Record<string, string> | undefined;
  if (metadata !== undefined && on('metadata')) {
    rewrittenMetadata = {};
    for (const [key, text] of Object.entries(metadata)) {
      const newKey = uniqueKey(rewrite(key, 'metadata'), new Set(Object.keys(rewrittenMetadata)));
      rewrittenMetadata[newKey] = rewriteLabelled(text, key, (t) => rewrite(t, 'metadata'));
    }
  }
  return {
    ...candidate,
    text: on('text') ? rewrite(candidate.text, 'text') : candidate.text,
    ...(candidate.value !== undefined && on('value')
      ? { value: rewriteValue(candidate.value, (text) => rewrite(text, 'value'), candidate.key) }
      : {}),
    evidence:
      excerpt !== undefined && on('evidence.excerpt')
        ? { ...candidate.evidence, excerpt: rewrite(excerpt, 'evidence.excerpt') }
        : candidate.evidence,
    ...(rewrittenMetadata !== undefined ? { metadata: rewrittenMetadata } : {}),
    ...(candidate.ttlReason !== undefined && on('ttl_reason')
      ? { ttlReason: rewrite(candidate.ttlReason, 'ttl_reason') }
      : {}),
  };
}

/** "text and value", "text, value and metadata": fields for notes, in {@link CONTENT_FIELDS} order. */
export function listFields(fields: Iterable<ContentField>): string {
  const set = new Set(fields);
  const ordered = CONTENT_FIELDS.filter((f) => set.has(f));
  if (ordered.length <= 1) return ordered.join('');
  return `${ordered.slice(0, -1).join(', ')} and ${ordered[ordered.length - 1] ?? ''}`;
}
