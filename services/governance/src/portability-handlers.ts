import type { HandlerContext } from '@connectrpc/connect';
import type { ExportUserResponse, ImportUserRequest, ImportUserResponse } from '@engram/contracts/governance';
import { deriveId, parseExport, recordKey, remapIds } from '@engram/portability';
import { errors, requirePrincipal } from '@engram/runtime';
import { knownMigrations, readSubjectSnapshot, SnapshotConflict, writeSubjectSnapshot } from '@engram/store';
import { isAdmin, type GovernanceDeps, type GovernanceImpl } from './deps.js';
import {
  byFormatKind,
  exportLines,
  exportRecords,
  importSnapshot,
  KIND_OF,
  redactRecords,
} from './portability.js';

/** Lines per ExportUser response, and the bytes they may add up to (one longer line goes alone). */
const LINES_PER_RESPONSE = 500;
const BYTES_PER_RESPONSE = 1024 * 1024;
const MAX_SUBJECT = 256;

/** What an import stream carried: its options (first message) and its lines. */
interface ReceivedImport {
  readonly subject: string;
  readonly validateOnly: boolean;
  readonly lines: string[];
}

/**
 * ExportUser and ImportUser (decision 0039): a user's whole content out as the Engram export
 * format, and back in — into this or another deployment or tenant — checked whole, redacted and
 * written in one transaction, with the index rebuilt through the outbox.
 */
export class PortabilityHandlers implements Pick<GovernanceImpl, 'exportUser' | 'importUser'> {
  readonly #deps: GovernanceDeps;

  constructor(deps: GovernanceDeps) {
    this.#deps = deps;
  }

  /** ExportUser: the caller's own content, one consistent snapshot, streamed in batches of lines. */
  readonly exportUser: GovernanceImpl['exportUser'] = (_request, ctx) => this.#export(ctx);

  async *#export(ctx: HandlerContext): AsyncGenerator<ExportUserResponse> {
    const principal = requirePrincipal(ctx.values);
    const snapshot = await readSubjectSnapshot(this.#deps.store, principal.tenantId, principal.subject);
    const records = exportRecords(snapshot);
    const schema = knownMigrations().at(-1) ?? '';
    let batch: string[] = [];
    let bytes = 0;
    let total = 0;
    for (const line of exportLines(records, {
      tenantId: principal.tenantId,
      subject: principal.subject,
      schema,
      now: Date.now(),
    })) {
      if (
        batch.length > 0 &&
        (batch.length >= LINES_PER_RESPONSE || bytes + line.length > BYTES_PER_RESPONSE)
      ) {
        yield { $typeName: 'engram.governance.v1.ExportUserResponse', lines: batch };
        batch = [];
        bytes = 0;
      }
      batch.push(line);
      bytes += line.length;
      total += 1;
    }
    yield { $typeName: 'engram.governance.v1.ExportUserResponse', lines: batch };
    this.#deps.logger.info(
      {
        subject: principal.subject,
        lines: total,
        ...Object.fromEntries(Object.entries(records).map(([k, v]) => [k, v.length])),
      },
      'user exported',
    );
  }

  /** ImportUser: read the whole stream, check it, then write it in one transaction. */
  readonly importUser: GovernanceImpl['importUser'] = async (requests, ctx) => {
    const principal = requirePrincipal(ctx.values);
    const received = await this.#receive(requests);
    const subject = received.subject === '' ? principal.subject : received.subject;
    if (subject.length > MAX_SUBJECT)
      throw errors.fieldInvalid('subject', `at most ${MAX_SUBJECT} characters`);
    if (subject !== principal.subject && !isAdmin(principal)) {
      throw errors.permissionDenied(
        'ROLE_REQUIRED',
        'importing for another subject requires the "admin" role',
        {
          role: 'admin',
        },
      );
    }
    const parsed = parseExport(received.lines);
    const { tenant: sourceTenant, subject: sourceSubject } = parsed.header.source;
    const remapped = sourceTenant !== principal.tenantId || sourceSubject !== subject;
    // Target id → source id, to name the line of a record the store refuses.
    const sourceOf = new Map<string, string>();
    const mapId = (id: string) => {
      const target = remapped ? deriveId(principal.tenantId, subject, id) : id;
      sourceOf.set(target, id);
      return target;
    };
    const { records, changed } = redactRecords(remapIds(parsed.records, mapId), {
      redactSecrets: this.#deps.redactSecrets(principal.tenantId),
    });
    const snapshot = importSnapshot(records, principal.tenantId, subject);
    let counts;
    try {
      counts = await writeSubjectSnapshot(this.#deps.store, principal.tenantId, snapshot, {
        validateOnly: received.validateOnly,
      });
    } catch (error) {
      if (!(error instanceof SnapshotConflict)) throw error;
      const kind = KIND_OF[error.kind];
      const sourceId = sourceOf.get(error.id) ?? error.id;
      const line = parsed.lineOf.get(recordKey(kind, { id: sourceId, sessionId: sourceId })) ?? 0;
      throw errors.failedPrecondition(
        'IMPORT_CONFLICT',
        `line ${line}: the ${kind} would take ${error.field === 'id' ? 'an identifier' : `a ${error.field}`} that belongs to other content`,
        { line, kind, field: error.field },
      );
    }
    this.#deps.logger.info(
      {
        subject,
        importedBy: principal.subject,
        records: parsed.recordCount,
        remapped,
        validateOnly: received.validateOnly,
        redactedFields: changed,
        created: counts.created,
      },
      received.validateOnly ? 'import checked (validate only)' : 'user imported',
    );
    return {
      $typeName: 'engram.governance.v1.ImportUserResponse',
      subject,
      sourceTenant,
      sourceSubject,
      idsRemapped: remapped,
      records: BigInt(parsed.recordCount),
      created: byFormatKind(counts.created),
      unchanged: byFormatKind(counts.unchanged),
      redactedFields: BigInt(changed),
      validateOnly: received.validateOnly,
    } satisfies ImportUserResponse;
  };

  /** The stream's options and lines, up to the configured byte limit. */
  async #receive(requests: AsyncIterable<ImportUserRequest>): Promise<ReceivedImport> {
    const limit = this.#deps.importMaxBytes;
    const lines: string[] = [];
    let subject = '';
    let validateOnly = false;
    let bytes = 0;
    let first = true;
    for await (const request of requests) {
      if (first) {
        subject = request.subject;
        validateOnly = request.validateOnly;
        first = false;
      } else if (request.subject !== '' || request.validateOnly) {
        throw errors.invalidArgument(
          'STREAM_PROTOCOL_VIOLATION',
          'subject and validate_only belong in the first message only',
          { field: request.subject !== '' ? 'subject' : 'validate_only' },
        );
      }
      for (const line of request.lines) {
        bytes += Buffer.byteLength(line, 'utf8') + 1;
        if (bytes > limit) {
          throw errors.resourceExhausted('BATCH_TOO_LARGE', `the import is over ${limit} bytes`, {
            limit_bytes: limit,
          });
        }
        lines.push(line);
      }
    }
    return { subject, validateOnly, lines };
  }
}
