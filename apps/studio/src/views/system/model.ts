/** Pure logic of the System view: health rows, index figures and reindex progress. */

/** The four Engram services, by their gRPC names (the descriptors' typeName). */
export const SERVICE_NAMES = [
  'engram.governance.v1.GovernanceService',
  'engram.ingestion.v1.IngestionService',
  'engram.retrieval.v1.RetrievalService',
  'engram.context.v1.ContextService',
] as const;

/** The short label of a gRPC service name (`engram.retrieval.v1.RetrievalService` → `retrieval`). */
export function serviceLabel(typeName: string): string {
  const parts = typeName.split('.');
  return parts.length >= 3 && parts[0] === 'engram' ? (parts[1] ?? typeName) : typeName;
}

/** The tag tone of a health serving status name. */
export function servingTone(status: string): 'ok' | 'warn' | 'plain' {
  if (status === 'SERVING') return 'ok';
  if (status === 'NOT_SERVING' || status === 'SERVICE_UNKNOWN' || status === 'UNREACHABLE') return 'warn';
  return 'plain';
}

/** A signed drift (`+3`, `−2`, `0`), `—` when the index could not be counted. */
export function formatDrift(drift: bigint | number | undefined): string {
  if (drift === undefined) return '—';
  const n = Number(drift);
  if (n > 0) return `+${String(n)}`;
  if (n < 0) return `−${String(-n)}`;
  return '0';
}

/** The tone of a drift: 0 is fine, anything else is worth a look. */
export function driftTone(drift: bigint | number | undefined): 'ok' | 'warn' | 'plain' {
  if (drift === undefined) return 'plain';
  return Number(drift) === 0 ? 'ok' : 'warn';
}

/** An optional count as text (`—` when unset). */
export function optionalCount(n: bigint | number | undefined): string {
  return n === undefined ? '—' : String(n);
}

/** A duration in seconds as `1 h 2 min`, `3 min 4 s`, `5.2 s`; `—` when absent. */
export function formatSeconds(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '—';
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  const whole = Math.round(seconds);
  if (whole < 60) return `${String(whole)} s`;
  if (whole < 3600) return `${String(Math.floor(whole / 60))} min ${String(whole % 60)} s`;
  return `${String(Math.floor(whole / 3600))} h ${String(Math.floor((whole % 3600) / 60))} min`;
}

/** A protobuf Duration (seconds bigint, nanos) in seconds. */
export function durationSeconds(
  d: { readonly seconds: bigint; readonly nanos: number } | undefined,
): number | undefined {
  return d === undefined ? undefined : Number(d.seconds) + d.nanos / 1e9;
}

/** Reindex job state names that end the job. */
const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** Whether a reindex job in this state will not change any more. */
export function jobFinished(state: string): boolean {
  return TERMINAL.has(state);
}

/** The progress of a reindex job, 0–1 (`rows_scanned / rows_total`), or undefined before it has counted. */
export function jobProgress(rowsScanned: bigint, rowsTotal: bigint, state: string): number | undefined {
  if (state === 'SUCCEEDED') return 1;
  if (rowsTotal <= 0n) return undefined;
  return Math.min(1, Number(rowsScanned) / Number(rowsTotal));
}

/** A fresh idempotency key for one user action (1–64 of `[A-Za-z0-9_-]`). */
export function newRequestId(random: () => string = () => crypto.randomUUID()): string {
  return random()
    .replace(/[^A-Za-z0-9_-]/g, '')
    .slice(0, 64);
}
