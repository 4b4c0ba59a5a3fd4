/**
 * The error contract of every RPC, read from the .proto comments (the contract clients see):
 * per RPC, the `ErrorInfo` reasons its comment lists, plus the generic reasons of its service's
 * header comment, plus the reasons of an RPC it refers to ("all those of `IngestDocument`",
 * "besides those of `BuildContext`"); per reason, the status code `error_reason.proto` gives it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@connectrpc/connect';
import { protoRoot } from '../harness.js';

const SERVICE_FILES = {
  'engram.governance.v1.GovernanceService': 'engram/governance/v1/governance_service.proto',
  'engram.ingestion.v1.IngestionService': 'engram/ingestion/v1/ingestion_service.proto',
  'engram.retrieval.v1.RetrievalService': 'engram/retrieval/v1/retrieval_service.proto',
  'engram.context.v1.ContextService': 'engram/context/v1/context_service.proto',
} as const;

const CODE_BY_NAME: Record<string, Code> = {
  CANCELLED: Code.Canceled,
  UNKNOWN: Code.Unknown,
  INVALID_ARGUMENT: Code.InvalidArgument,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  PERMISSION_DENIED: Code.PermissionDenied,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  ABORTED: Code.Aborted,
  OUT_OF_RANGE: Code.OutOfRange,
  UNIMPLEMENTED: Code.Unimplemented,
  INTERNAL: Code.Internal,
  UNAVAILABLE: Code.Unavailable,
  DATA_LOSS: Code.DataLoss,
  UNAUTHENTICATED: Code.Unauthenticated,
};

/** Every `ErrorReason` (without the prefix) and the status codes its comment allows. */
function readReasons(): Map<string, Set<Code>> {
  const text = readFileSync(join(protoRoot, 'engram/common/v1/error_reason.proto'), 'utf8');
  const reasons = new Map<string, Set<Code>>();
  let sectionCodes: Code[] = [];
  let pending: Code[] | undefined;
  for (const line of text.split('\n')) {
    const section = /^\s*\/\/ --- .* \[([A-Z_, ]+)\] ---/.exec(line);
    if (section !== null) {
      sectionCodes = section[1]!.split(',').map((c) => CODE_BY_NAME[c.trim()]!);
      pending = undefined;
      continue;
    }
    const own = /^\s*\/\/ \[([A-Z_]+)\]/.exec(line);
    if (own !== null) pending = [CODE_BY_NAME[own[1]!]!];
    const value = /^\s*ERROR_REASON_([A-Z_]+) = \d+;/.exec(line);
    if (value !== null) {
      if (value[1] !== 'UNSPECIFIED') reasons.set(value[1]!, new Set(pending ?? sectionCodes));
      pending = undefined;
    }
  }
  return reasons;
}

export const REASON_CODES = readReasons();
const ALL_REASONS = [...REASON_CODES.keys()];

/** Reason names mentioned in a comment; `TOKEN_*` stands for every TOKEN_ reason. */
function reasonsIn(comment: string): Set<string> {
  const found = new Set<string>();
  if (comment.includes('TOKEN_*')) for (const r of ALL_REASONS) if (r.startsWith('TOKEN_')) found.add(r);
  for (const m of comment.matchAll(/\b[A-Z][A-Z_]{2,}\b/g)) if (REASON_CODES.has(m[0])) found.add(m[0]);
  return found;
}

export interface RpcContract {
  /** `engram.governance.v1.GovernanceService/CreateMemory`. */
  readonly id: string;
  readonly reasons: ReadonlySet<string>;
}

/** Documented reasons per RPC, keyed by `<service type name>/<method name>`. */
export function readContracts(): Map<string, RpcContract> {
  const contracts = new Map<string, RpcContract>();
  for (const [service, file] of Object.entries(SERVICE_FILES)) {
    const lines = readFileSync(join(protoRoot, file), 'utf8').split('\n');
    const start = lines.findIndex((l) => /^service \w+ \{/.test(l));
    let header = '';
    for (let i = start - 1; i >= 0 && lines[i]!.startsWith('//'); i -= 1) header = `${lines[i]!}\n${header}`;
    const generic = reasonsIn(header);
    const own = new Map<string, { reasons: Set<string>; refers: string[] }>();
    let comment: string[] = [];
    for (let i = start + 1; i < lines.length && !/^\}/.test(lines[i]!); i += 1) {
      const line = lines[i]!.trim();
      if (line.startsWith('//')) comment.push(line);
      else if (line.startsWith('rpc ')) {
        const name = /^rpc (\w+)\(/.exec(line)![1]!;
        const text = comment.join('\n');
        const refers = [...text.matchAll(/(?:those|all those) of `(\w+)`/g)].map((m) => m[1]!);
        own.set(name, { reasons: reasonsIn(text), refers });
        comment = [];
      } else comment = [];
    }
    for (const [name, { reasons, refers }] of own) {
      const all = new Set([...generic, ...reasons]);
      for (const r of refers) for (const x of own.get(r)?.reasons ?? []) all.add(x);
      contracts.set(`${service}/${name}`, { id: `${service}/${name}`, reasons: all });
    }
  }
  return contracts;
}
