import { errors } from '@engram/errors';

/** A ULID, as every Engram resource id is. */
export const ULID_PATTERN = '[0-9A-HJKMNP-TV-Z]{26}';

/** INVALID_ARGUMENT `NAME_INVALID` naming the field and the expected pattern. */
export function badName(field: string, pattern: string): never {
  throw errors.invalidArgument('NAME_INVALID', `${field} must look like ${pattern}`, { field, pattern });
}

/**
 * A parser of one resource-name template (`sessions/{session}/memCells/{mem_cell}`): every
 * `{segment}` is a ULID. It returns the ids in order, or throws INVALID_ARGUMENT `FIELD_REQUIRED`
 * when the name is empty and `NAME_INVALID` naming the field and the template when it does not match.
 */
function nameParser(template: string): (name: string, field?: string) => string[] {
  const pattern = new RegExp(`^${template.replace(/\{[a-z_]+\}/g, `(${ULID_PATTERN})`)}$`);
  return (name, field = 'name') => {
    if (name === '') throw errors.fieldRequired(field);
    const match = pattern.exec(name);
    if (match === null) return badName(field, template);
    return match.slice(1);
  };
}

/** The one id of a single-segment name, for the parsers below. */
function single(template: string): (name: string, field?: string) => string {
  const parse = nameParser(template);
  return (name, field) => parse(name, field)[0] ?? badName(field ?? 'name', template);
}

/** `sessions/{id}` → id. */
export const parseSessionName = single('sessions/{session}');
/** `sessions/{id}/state` → the session id. */
export const parseSessionStateName = single('sessions/{session}/state');
/** `memories/{id}` → id. */
export const parseMemoryName = single('memories/{memory}');
/** `extractionJobs/{id}` → id. */
export const parseExtractionJobName = single('extractionJobs/{extraction_job}');
/** `forgetReceipts/{id}` → id. */
export const parseForgetReceiptName = single('forgetReceipts/{forget_receipt}');
/** `reindexJobs/{id}` → id. */
export const parseReindexJobName = single('reindexJobs/{reindex_job}');
/** `documents/{id}` → id. */
export const parseDocumentName = single('documents/{document}');

const messageName = nameParser('sessions/{session}/messages/{message}');
/** `sessions/{s}/messages/{m}` → ids. */
export function parseMessageName(name: string, field = 'name'): { sessionId: string; messageId: string } {
  const [sessionId = '', messageId = ''] = messageName(name, field);
  return { sessionId, messageId };
}

const memCellName = nameParser('sessions/{session}/memCells/{mem_cell}');
/** `sessions/{s}/memCells/{c}` → ids. */
export function parseMemCellName(name: string, field = 'name'): { sessionId: string; memCellId: string } {
  const [sessionId = '', memCellId = ''] = memCellName(name, field);
  return { sessionId, memCellId };
}

const revisionName = nameParser('memories/{memory}/revisions/{revision}');
/** `memories/{m}/revisions/{r}` → ids. */
export function parseRevisionName(name: string, field = 'name'): { memoryId: string; revisionId: string } {
  const [memoryId = '', revisionId = ''] = revisionName(name, field);
  return { memoryId, revisionId };
}

const chunkName = nameParser('documents/{document}/chunks/{chunk}');
/** `documents/{d}/chunks/{c}` → ids. */
export function parseChunkName(name: string, field = 'name'): { documentId: string; chunkId: string } {
  const [documentId = '', chunkId = ''] = chunkName(name, field);
  return { documentId, chunkId };
}

/**
 * The paths of an update mask, checked against the updatable ones: FIELD_REQUIRED when the mask is
 * empty, UPDATE_MASK_INVALID naming the first unknown or non-updatable path (`*` included).
 */
export function checkUpdateMask(
  paths: readonly string[],
  updatable: readonly string[],
  field = 'update_mask',
): void {
  if (paths.length === 0) throw errors.fieldRequired(field);
  for (const path of paths) {
    if (!updatable.includes(path)) {
      throw errors.invalidArgument(
        'UPDATE_MASK_INVALID',
        `${field} path "${path}" is unknown or not updatable; updatable: ${updatable.join(', ')}`,
        { field, path },
      );
    }
  }
}

/** The range of `google.protobuf.Timestamp`: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
const MIN_SECONDS = -62_135_596_800n;
const MAX_SECONDS = 253_402_300_799n;

/**
 * A timestamp as epoch milliseconds, or INVALID_ARGUMENT `FIELD_INVALID` naming `field` when it is
 * outside the Timestamp range or its nanos are not 0–999,999,999.
 */
export function checkedTimestampMs(
  t: { readonly seconds: bigint; readonly nanos: number },
  field: string,
): number {
  if (
    t.seconds < MIN_SECONDS ||
    t.seconds > MAX_SECONDS ||
    !Number.isInteger(t.nanos) ||
    t.nanos < 0 ||
    t.nanos > 999_999_999
  ) {
    throw errors.fieldInvalid(field, 'not a valid timestamp (years 1–9999, nanos 0–999999999)');
  }
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1_000_000);
}
