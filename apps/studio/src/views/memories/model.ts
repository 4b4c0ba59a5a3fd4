/**
 * Pure logic of the Memories and Review views: filters ⇄ URL query ⇄ ListMemories request, the
 * Remember form → CreateMemory request, edits → UpdateMemory mask, and how decisions, refusals
 * and evidence are presented. No React here (unit-tested in model.spec.ts).
 */
import type { JsonObject, JsonValue, MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Scope } from '@engram/contracts/common';
import {
  DecisionOutcome,
  MemoryStatus,
  MemoryType,
  RuleVerdict,
  type CreateMemoryRequestSchema,
  type Decision,
  type Evidence,
  type ListMemoriesRequestSchema,
  type Memory,
  type UpdateMemoryRequestSchema,
} from '@engram/contracts/governance';
import { enumName } from '../../lib/format.js';

export type ListMemoriesInit = MessageInitShape<typeof ListMemoriesRequestSchema> & { pageToken: string };
export type CreateMemoryInit = MessageInitShape<typeof CreateMemoryRequestSchema>;
export type UpdateMemoryInit = MessageInitShape<typeof UpdateMemoryRequestSchema>;

/** A colour of the shell's tags (`tag-ok`, `tag-warn`, `tag-info`, `tag-plain`). */
export type Tone = 'ok' | 'warn' | 'info' | 'plain';

/** The types, statuses and scopes a filter may pick, in display order. */
export const MEMORY_TYPES: readonly MemoryType[] = [
  MemoryType.FACT,
  MemoryType.EPISODE,
  MemoryType.EVENT,
  MemoryType.FORESIGHT,
  MemoryType.SUMMARY,
];
export const MEMORY_STATUSES: readonly MemoryStatus[] = [
  MemoryStatus.ACTIVE,
  MemoryStatus.QUARANTINED,
  MemoryStatus.DELETED,
  MemoryStatus.SUPERSEDED,
  MemoryStatus.EXPIRED,
];
export const SCOPES: readonly Scope[] = [Scope.SELF, Scope.ORG, Scope.PLATFORM];

/** What the list shows; kept in the URL query so that a filtered list can be linked. */
export interface MemoryFilters {
  readonly types: readonly MemoryType[];
  /** Empty: the server's default (ACTIVE only). */
  readonly statuses: readonly MemoryStatus[];
  readonly namespaces: readonly string[];
  readonly scopes: readonly Scope[];
  /** Created on or after this local date, `YYYY-MM-DD`; empty: no bound. */
  readonly from: string;
  /** Created on or before this local date (inclusive), `YYYY-MM-DD`; empty: no bound. */
  readonly to: string;
  readonly evergreenOnly: boolean;
}

export const NO_FILTERS: MemoryFilters = {
  types: [],
  statuses: [],
  namespaces: [],
  scopes: [],
  from: '',
  to: '',
  evergreenOnly: false,
};

type EnumObject = Readonly<Record<string, string | number>>;

/** `FACT,EVENT` → the enum's values; unknown names are dropped. */
export function enumList<E extends number>(enumObject: EnumObject, csv: string | null): E[] {
  if (csv === null || csv === '') return [];
  const out: E[] = [];
  for (const name of csv.split(',')) {
    const value = enumObject[name.trim().toUpperCase()];
    if (typeof value === 'number' && value !== 0 && !out.includes(value as E)) out.push(value as E);
  }
  return out;
}

/** The enum values as `FACT,EVENT` (undefined when empty, so the query drops it). */
export function enumCsv(enumObject: EnumObject, values: readonly number[]): string | undefined {
  if (values.length === 0) return undefined;
  return values.map((v) => String(enumObject[v] ?? v)).join(',');
}

/** A comma- or space-separated list of namespaces, trimmed, without empties or repeats. */
export function splitList(text: string | null): string[] {
  if (text === null) return [];
  return [...new Set(text.split(/[,\s]+/).filter((s) => s !== ''))];
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Reads the filters of `#/memories?type=FACT&status=ACTIVE,DELETED&ns=…&scope=SELF&from=…&to=…&evergreen=1`. */
export function filtersFromQuery(query: URLSearchParams): MemoryFilters {
  const date = (key: string) => {
    const v = query.get(key) ?? '';
    return DATE.test(v) ? v : '';
  };
  return {
    types: enumList<MemoryType>(MemoryType, query.get('type')),
    statuses: enumList<MemoryStatus>(MemoryStatus, query.get('status')),
    namespaces: splitList(query.get('ns')),
    scopes: enumList<Scope>(Scope, query.get('scope')),
    from: date('from'),
    to: date('to'),
    evergreenOnly: query.get('evergreen') === '1',
  };
}

/** The query of {@link filtersFromQuery} (for `routeHash('memories', [], query)`). */
export function filtersToQuery(f: MemoryFilters): Record<string, string | undefined> {
  return {
    type: enumCsv(MemoryType, f.types),
    status: enumCsv(MemoryStatus, f.statuses),
    ns: f.namespaces.length > 0 ? f.namespaces.join(',') : undefined,
    scope: enumCsv(Scope, f.scopes),
    from: f.from === '' ? undefined : f.from,
    to: f.to === '' ? undefined : f.to,
    evergreen: f.evergreenOnly ? '1' : undefined,
  };
}

/** Local midnight of `YYYY-MM-DD`, plus `days`. */
function localDay(date: string, days = 0): Date {
  const [y = 0, m = 1, d = 1] = date.split('-').map(Number);
  return new Date(y, m - 1, d + days);
}

/** The ListMemories request of the filters (first page; the infinite query sets `pageToken`). */
export function listRequest(f: MemoryFilters, pageSize = 25): ListMemoriesInit {
  const request: ListMemoriesInit = { pageSize, pageToken: '' };
  if (f.types.length > 0) request.types = [...f.types];
  if (f.statuses.length > 0) request.statuses = [...f.statuses];
  if (f.namespaces.length > 0) request.namespaces = [...f.namespaces];
  if (f.scopes.length > 0) request.scopes = [...f.scopes];
  if (f.evergreenOnly) request.evergreenOnly = true;
  if (f.from !== '' || f.to !== '') {
    request.createTime = {
      ...(f.from !== '' ? { startTime: timestampFromDate(localDay(f.from)) } : {}),
      ...(f.to !== '' ? { endTime: timestampFromDate(localDay(f.to, 1)) } : {}),
    };
  }
  return request;
}

/** The review queue: the tenant's QUARANTINED memories (all owners for a reviewer). */
export function reviewRequest(pageSize = 25): ListMemoriesInit {
  return { pageSize, pageToken: '', statuses: [MemoryStatus.QUARANTINED] };
}

/** The Remember form as typed. */
export interface RememberForm {
  readonly type: MemoryType;
  readonly text: string;
  readonly namespace: string;
  readonly key: string;
  /** A JSON object for a FACT's value; empty: `{"value": text}`. */
  readonly value: string;
  /** 0–1 as typed; empty: the server's default (1.0). */
  readonly confidence: string;
  readonly evergreen: boolean;
  readonly validateOnly: boolean;
}

export const EMPTY_FORM: RememberForm = {
  type: MemoryType.FACT,
  text: '',
  namespace: '',
  key: '',
  value: '',
  confidence: '',
  evergreen: false,
  validateOnly: false,
};

/** What is wrong with the form before anything is sent (the server judges the rest). */
export type FormProblem = 'textRequired' | 'valueNotObject' | 'confidenceNotNumber';

export type Built<T> =
  { readonly ok: true; readonly request: T } | { readonly ok: false; readonly problem: FormProblem };

/** Parses a FACT value: a JSON object, or undefined when the text is not one. */
export function parseValue(text: string): JsonObject | undefined {
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : undefined;
}

/** A confidence as typed: undefined when empty, NaN when not a number. */
export function parseConfidence(text: string): number | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  return /^\d*\.?\d+$/.test(t) ? Number(t) : Number.NaN;
}

/**
 * The CreateMemory request of the form. A FACT needs namespace, key and a value (the statement
 * as `{"value": text}` when no JSON is given); the other types need text. Evergreen only for a
 * FACT. Limits (patterns, lengths, confidence range) are left to the server's `schema` rule so
 * that its decision is what the user sees.
 */
export function createRequest(form: RememberForm, requestId: string): Built<CreateMemoryInit> {
  const text = form.text.trim();
  const fact = form.type === MemoryType.FACT;
  if (!fact && text === '') return { ok: false, problem: 'textRequired' };
  let value: JsonObject | undefined;
  if (fact) {
    if (form.value.trim() !== '') {
      value = parseValue(form.value);
      if (value === undefined) return { ok: false, problem: 'valueNotObject' };
    } else if (text !== '') value = { value: text };
    else return { ok: false, problem: 'textRequired' };
  }
  const confidence = parseConfidence(form.confidence);
  if (confidence !== undefined && Number.isNaN(confidence))
    return { ok: false, problem: 'confidenceNotNumber' };
  return {
    ok: true,
    request: {
      requestId,
      validateOnly: form.validateOnly,
      memory: {
        type: form.type,
        ...(text !== '' ? { text } : {}),
        ...(fact ? { namespace: form.namespace.trim(), key: form.key.trim(), value } : {}),
        ...(fact && form.evergreen ? { evergreen: true } : {}),
        ...(confidence !== undefined ? { confidence } : {}),
      },
    },
  };
}

/** The edits the detail view offers. */
export interface MemoryEdit {
  readonly text?: string;
  readonly evergreen?: boolean;
}

/**
 * The UpdateMemory request of `edit` on `memory`: only the fields that change are in the mask,
 * conditional on the memory's etag; undefined when nothing changes.
 */
export function updateRequest(memory: Memory, edit: MemoryEdit): UpdateMemoryInit | undefined {
  const paths: string[] = [];
  const changed: { text?: string; evergreen?: boolean } = {};
  if (edit.text !== undefined && edit.text.trim() !== memory.text) {
    paths.push('text');
    changed.text = edit.text.trim();
  }
  if (edit.evergreen !== undefined && edit.evergreen !== memory.evergreen) {
    paths.push('evergreen');
    changed.evergreen = edit.evergreen;
  }
  if (paths.length === 0) return undefined;
  return { memory: { name: memory.name, ...changed }, updateMask: { paths }, etag: memory.etag };
}

/** The tag colour of an outcome. */
export function outcomeTone(outcome: DecisionOutcome): Tone {
  switch (outcome) {
    case DecisionOutcome.ACCEPTED:
    case DecisionOutcome.SUPERSEDED:
      return 'ok';
    case DecisionOutcome.QUARANTINED:
    case DecisionOutcome.REJECTED:
      return 'warn';
    case DecisionOutcome.MERGED_DUPLICATE:
      return 'info';
    default:
      return 'plain';
  }
}

/** The tag colour of a memory status. */
export function statusTone(status: MemoryStatus): Tone {
  switch (status) {
    case MemoryStatus.ACTIVE:
      return 'ok';
    case MemoryStatus.QUARANTINED:
    case MemoryStatus.DELETED:
      return 'warn';
    case MemoryStatus.SUPERSEDED:
    case MemoryStatus.EXPIRED:
      return 'info';
    default:
      return 'plain';
  }
}

/** A decision as the views show it: outcome name and colour, the deciding rule and its sentence. */
export interface DecisionSummary {
  readonly outcome: string;
  readonly tone: Tone;
  readonly rule: string;
  readonly reason: string;
  /** The rules that changed something (ADJUSTED, QUARANTINED, …), as `rule: note`. */
  readonly notes: readonly string[];
}

export function decisionSummary(decision: Decision): DecisionSummary {
  return {
    outcome: enumName(DecisionOutcome, decision.outcome),
    tone: outcomeTone(decision.outcome),
    rule: decision.rule,
    reason: decision.reason,
    notes: decision.evaluations
      .filter((e) => e.verdict !== RuleVerdict.PASSED && e.verdict !== RuleVerdict.NOT_EVALUATED)
      .map((e) => (e.note === '' ? e.rule : `${e.rule}: ${e.note}`)),
  };
}

/** The rule of a refused write, from the error's metadata (`rule`, else `schema` for field errors). */
export function refusalRule(metadata: Readonly<Record<string, string>>): string | undefined {
  if (metadata['rule'] !== undefined && metadata['rule'] !== '') return metadata['rule'];
  if (metadata['field'] !== undefined) return 'schema';
  return undefined;
}

/** The rule named at the start of a status reason (`pii_denial: matched …` → `pii_denial`). */
export function reasonRule(statusReason: string): string | undefined {
  const match = /^([a-z_]+):/.exec(statusReason);
  return match?.[1];
}

/** One evidence message, with where the Sessions view shows it. */
export interface EvidenceMessage {
  readonly name: string;
  readonly sessionId: string;
  readonly messageId: string;
}

/** The messages of `evidence` whose names are `sessions/{session}/messages/{message}`. */
export function evidenceMessages(evidence: Evidence | undefined): EvidenceMessage[] {
  const out: EvidenceMessage[] = [];
  for (const name of evidence?.messages ?? []) {
    const match = /^sessions\/([^/]+)\/messages\/([^/]+)$/.exec(name);
    if (match?.[1] !== undefined && match[2] !== undefined) {
      out.push({ name, sessionId: match[1], messageId: match[2] });
    }
  }
  return out;
}

/** The session of a MemCell name `sessions/{session}/memCells/{mem_cell}`. */
export function memCellSession(memCell: string): string | undefined {
  return /^sessions\/([^/]+)\/memCells\/[^/]+$/.exec(memCell)?.[1];
}

/** The id of `memories/{id}` (undefined for anything else). */
export function memoryId(name: string): string | undefined {
  return /^memories\/([^/]+)$/.exec(name)?.[1];
}

/** Which actions the owner may take on a memory in `status` (UpdateMemory/Delete/Restore rules). */
export function allowedActions(memory: Pick<Memory, 'status' | 'type'>): {
  edit: boolean;
  pin: boolean;
  remove: boolean;
  restore: boolean;
} {
  const editable = memory.status === MemoryStatus.ACTIVE || memory.status === MemoryStatus.QUARANTINED;
  return {
    edit: editable,
    pin: editable && memory.type === MemoryType.FACT,
    remove: memory.status !== MemoryStatus.DELETED && memory.status !== MemoryStatus.UNSPECIFIED,
    restore: memory.status === MemoryStatus.DELETED || memory.status === MemoryStatus.EXPIRED,
  };
}

/** A FACT's value as compact JSON for display (data: shown as text, never as markup). */
export function valueText(value: JsonObject | undefined): string {
  return value === undefined ? '' : JSON.stringify(value, null, 2);
}

/** A fresh idempotency key of `[A-Za-z0-9_-]` (one per submitted form). */
export function newRequestId(random: () => number = Math.random): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let id = 'studio-';
  for (let i = 0; i < 20; i++) id += chars.charAt(Math.floor(random() * chars.length));
  return id;
}
