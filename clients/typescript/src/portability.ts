import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  GovernanceService,
  type ImportUserRequestSchema,
  type ImportUserResponse,
} from '@engram/contracts/governance';
import type { CallOptions, Caller } from './caller.js';

/** Lines per ImportUser message: small enough for any server's message limit with ordinary records. */
const LINES_PER_MESSAGE = 200;

/** What `portability.import` takes besides the lines. */
export interface ImportOptions extends CallOptions {
  /** Import for another user of the tenant (needs the `admin` role). Default: the caller. */
  readonly subject?: string;
  /** Check everything and report what would be written; write nothing. */
  readonly validateOnly?: boolean;
}

/**
 * A user's whole memory out and back in (docs/export-format.md): `export()` yields the lines of
 * the Engram export format, `import()` loads such lines (or a converted mem0 export) into this
 * deployment. The server checks an import whole and writes it in one transaction, idempotently.
 */
export class Portability {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * Every line of the caller's export, in order: write each followed by `\n` and the result is
   * the file (`for await (const line of engram.portability.export()) out.write(line + '\n')`).
   */
  async *export(options?: CallOptions): AsyncGenerator<string, void, undefined> {
    for await (const response of this.#caller.serverStream(
      GovernanceService.method.exportUser,
      {},
      options,
    )) {
      yield* response.lines;
    }
  }

  /**
   * Imports the lines of an export (an array, or the whole file as one string). Client-streaming:
   * needs the gRPC transport (`@engram/client/node`). Retried like a unary call, which is safe
   * because an import that already happened changes nothing.
   */
  import(lines: readonly string[] | string, options: ImportOptions = {}): Promise<ImportUserResponse> {
    const all = typeof lines === 'string' ? lines.split('\n') : lines;
    const { subject = '', validateOnly = false, ...call } = options;
    // eslint-disable-next-line @typescript-eslint/require-await -- connect takes an AsyncIterable of requests
    async function* messages(): AsyncGenerator<MessageInitShape<typeof ImportUserRequestSchema>> {
      yield { subject, validateOnly, lines: all.slice(0, LINES_PER_MESSAGE) };
      for (let i = LINES_PER_MESSAGE; i < all.length; i += LINES_PER_MESSAGE) {
        yield { lines: all.slice(i, i + LINES_PER_MESSAGE) };
      }
    }
    return this.#caller.clientStream(GovernanceService.method.importUser, messages, call);
  }
}
