import { Scope } from '@engram/contracts/common';
import type { ChunkingOptions, Document } from '@engram/contracts/ingestion';
import { errors, type Principal } from '@engram/runtime';
import type { Scope as StoredScope } from '@engram/store';

/** Limits of the document fields (document.proto). */
const MAX_DISPLAY_NAME = 256;
const MAX_SOURCE_URI = 2048;
const MAX_METADATA_ENTRIES = 32;

/**
 * The scope a principal may give a new document: SELF by default; ORG only for a member of
 * `org_id`; PLATFORM only with the `platform` role. `org_id` is set exactly when the scope is ORG.
 */
export function authorizedScope(
  principal: Principal,
  scope: Scope,
  orgId: string,
): { scope: StoredScope; orgId: string } {
  switch (scope) {
    case Scope.UNSPECIFIED:
    case Scope.SELF:
      if (orgId !== '') throw errors.fieldInvalid('document.org_id', 'only allowed with SCOPE_ORG');
      return { scope: 'SELF', orgId: '' };
    case Scope.ORG:
      if (orgId === '') throw errors.fieldInvalid('document.org_id', 'required with SCOPE_ORG');
      if (!principal.orgIds.includes(orgId)) {
        throw errors.permissionDenied('SCOPE_NOT_ALLOWED', 'the caller is not a member of this org', {
          scope: 'SCOPE_ORG',
          org_id: orgId,
        });
      }
      return { scope: 'ORG', orgId };
    case Scope.PLATFORM:
      if (orgId !== '') throw errors.fieldInvalid('document.org_id', 'only allowed with SCOPE_ORG');
      if (!principal.roles.includes('platform')) {
        throw errors.permissionDenied('SCOPE_NOT_ALLOWED', 'PLATFORM scope requires the platform role', {
          scope: 'SCOPE_PLATFORM',
        });
      }
      return { scope: 'PLATFORM', orgId: '' };
    default:
      throw errors.fieldInvalid('document.scope', `unknown value ${String(scope)}`);
  }
}

/** A scope filter of a list: narrowing only (visibility already limits what is returned). */
export function authorizedListScope(scope: Scope): StoredScope {
  if (scope === Scope.SELF) return 'SELF';
  if (scope === Scope.ORG) return 'ORG';
  return 'PLATFORM';
}

/** Validates the client-settable document fields against their documented limits. */
export function checkDocumentFields(document: Document): void {
  if (Array.from(document.displayName).length > MAX_DISPLAY_NAME) {
    throw errors.fieldInvalid('document.display_name', `at most ${MAX_DISPLAY_NAME} characters`);
  }
  if (Array.from(document.sourceUri).length > MAX_SOURCE_URI) {
    throw errors.fieldInvalid('document.source_uri', `at most ${MAX_SOURCE_URI} characters`);
  }
  const entries = Object.entries(document.metadata);
  if (entries.length > MAX_METADATA_ENTRIES) {
    throw errors.fieldInvalid('document.metadata', `at most ${MAX_METADATA_ENTRIES} entries`);
  }
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > 64)
      throw errors.fieldInvalid('document.metadata', 'keys are 1–64 characters');
    if (value.length > 512)
      throw errors.fieldInvalid('document.metadata', 'values are at most 512 characters');
  }
}

/** Effective chunking options (the request's, with defaults), validated against their ranges. */
export function chunkingOptions(
  requested: ChunkingOptions | undefined,
  defaults: { chunkSize: number; overlap: number },
): { chunkSize: number; overlap: number; keepTablesWhole: boolean; keepCodeWhole: boolean } {
  const chunkSize = requested?.chunkSizeChars ?? defaults.chunkSize;
  if (chunkSize < 200 || chunkSize > 8000)
    throw errors.fieldInvalid('chunking.chunk_size_chars', 'range 200–8000');
  const overlap = requested?.overlapChars ?? Math.min(defaults.overlap, Math.floor(chunkSize / 2));
  if (overlap < 0 || overlap > Math.floor(chunkSize / 2)) {
    throw errors.fieldInvalid('chunking.overlap_chars', 'range 0 to chunk_size_chars / 2');
  }
  return {
    chunkSize,
    overlap,
    keepTablesWhole: requested?.keepTablesWhole ?? true,
    keepCodeWhole: requested?.keepCodeWhole ?? true,
  };
}

/** The display name when none was given: the last segment of the source, else the first line. */
export function defaultDisplayName(sourceUri: string, text: string): string {
  const fromUri = sourceUri
    .split(/[/\\]/)
    .filter((s) => s !== '')
    .pop();
  const firstLine = text
    .split('\n')
    .map((l) => l.replace(/^#+\s*/, '').trim())
    .find((l) => l !== '');
  return Array.from(fromUri ?? firstLine ?? '')
    .slice(0, MAX_DISPLAY_NAME)
    .join('');
}
