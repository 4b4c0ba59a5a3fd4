import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import type { ImportUserResponse } from '@engram/contracts/governance';
import { isEngramError } from '@engram/errors';
import { convertMem0, type ExportHeader } from '@engram/portability';
import { action } from '../actions.js';
import type { CliIo, CliRuntime } from '../context.js';
import { usageError } from '../errors.js';
import { renderFields } from '../format.js';

/** Lines per ImportUser message (well under the server's message limit for ordinary records). */
const LINES_PER_MESSAGE = 200;

/** A progress bar on stderr when it is a terminal (never on the data stream). */
function progressBar(io: CliIo, unit: string): SingleBar | undefined {
  if (io.stderr.isTTY !== true) return undefined;
  return new SingleBar(
    {
      format: ` {bar} {percentage}% | {value}/{total} ${unit}`,
      hideCursor: true,
      clearOnComplete: true,
      stream: io.stderr,
    },
    Presets.shades_classic,
  );
}

/** The records an export's header announces, plus its header and trailer lines. */
function linesAnnounced(headerLine: string): number {
  const header = JSON.parse(headerLine) as Partial<ExportHeader>;
  return Object.values(header.counts ?? {}).reduce<number>((n, c) => n + c, 0) + 2;
}

/** The lines of an import file: an Engram export, or mem0's export converted. */
async function importLines(
  io: CliIo,
  file: string,
  from: string,
  mem0User: string | undefined,
): Promise<string[]> {
  const text = file === '-' ? await readStdin(io) : await readFile(file, 'utf8');
  if (from === 'engram') return text.split('\n');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw usageError(`${file} is not JSON: a mem0 export is a JSON list of memories`);
  }
  try {
    return convertMem0(parsed, mem0User === undefined ? {} : { userId: mem0User });
  } catch (error) {
    if (isEngramError(error)) throw usageError(`${file}: ${error.message}`);
    throw error;
  }
}

async function readStdin(io: CliIo): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of io.stdin) parts.push(Buffer.isBuffer(part) ? part : Buffer.from(part));
  return Buffer.concat(parts).toString('utf8');
}

/** Counts by kind as `kind: n` lines, the kinds with nothing left out. */
function countLines(counts: Record<string, bigint>): string {
  const shown = Object.entries(counts).filter(([, n]) => n > 0n);
  return shown.length === 0 ? 'nothing' : shown.map(([kind, n]) => `${kind} ${String(n)}`).join(', ');
}

function importFields(r: ImportUserResponse): [string, string][] {
  return [
    ['subject', r.subject],
    [
      'source',
      `${r.sourceTenant} / ${r.sourceSubject}${r.idsRemapped ? ' (new identifiers for this tenant)' : ''}`,
    ],
    ['records', String(r.records)],
    [r.validateOnly ? 'would create' : 'created', countLines(r.created)],
    ['already there', countLines(r.unchanged)],
    ['fields redacted', String(r.redactedFields)],
  ];
}

/** `engram export` and `engram import`: a user's whole memory out as JSON lines, and back in. */
export function registerPortability(program: Command, io: CliRuntime): void {
  program
    .command('export')
    .description(
      "write everything you own (memories, sessions, documents) as the Engram export format's JSON lines",
    )
    .option('-o, --output <file>', 'write to this file instead of stdout')
    .addHelpText('after', '\nExample: engram export > me.jsonl   (format: docs/export-format.md)')
    .action(
      action(io, async ({ out, connect }, command) => {
        const { output } = command.opts<{ output?: string }>();
        if (output === undefined && out.json)
          throw usageError('--json needs --output: stdout carries the export');
        const connection = await connect();
        const sink = output === undefined ? io.stdout : createWriteStream(output, { mode: 0o600 });
        const bar = progressBar(io, 'lines');
        let written = 0;
        for await (const response of connection.governance.exportUser({})) {
          const [first] = response.lines;
          if (written === 0 && first !== undefined) bar?.start(linesAnnounced(first), 0);
          for (const line of response.lines) {
            if (!sink.write(`${line}\n`)) await once(sink, 'drain');
          }
          written += response.lines.length;
          bar?.update(written);
        }
        bar?.stop();
        if (sink !== io.stdout) {
          sink.end();
          await finished(sink);
        }
        out.document({ output, lines: written, records: Math.max(written - 2, 0) });
        out.note(
          `exported ${String(Math.max(written - 2, 0))} records${output === undefined ? '' : ` to ${output}`}`,
        );
      }),
    );

  program
    .command('import')
    .description(
      'load an export (or a mem0 export) into this deployment, for you or, as admin, for --subject',
    )
    .argument('<file>', "the export's JSON lines (or - for stdin)")
    .option(
      '--from <format>',
      'engram (the Engram export format) or mem0 (its JSON list of memories)',
      'engram',
    )
    .option('--mem0-user <id>', "with --from mem0: whose memories, when the file holds several users'")
    .option('--subject <subject>', 'import for another user of the tenant (needs the admin role)')
    .option('--validate-only', 'check everything and report what would be written; write nothing')
    .addHelpText(
      'after',
      '\nExamples:\n  engram import me.jsonl\n  engram import --from mem0 --mem0-user alice mem0-export.json',
    )
    .action(
      action(io, async ({ out, connect }, command, file) => {
        const options = command.opts<{
          from: string;
          mem0User?: string;
          subject?: string;
          validateOnly?: boolean;
        }>();
        if (options.from !== 'engram' && options.from !== 'mem0')
          throw usageError('--from expects engram or mem0');
        if (options.mem0User !== undefined && options.from !== 'mem0')
          throw usageError('--mem0-user goes with --from mem0');
        const lines = await importLines(io, String(file), options.from, options.mem0User);
        const connection = await connect();
        const bar = progressBar(io, 'lines sent');
        bar?.start(lines.length, 0);
        // eslint-disable-next-line @typescript-eslint/require-await -- connect takes an AsyncIterable of requests
        async function* requests() {
          for (let i = 0; i < lines.length || i === 0; i += LINES_PER_MESSAGE) {
            yield {
              ...(i === 0
                ? { subject: options.subject ?? '', validateOnly: options.validateOnly === true }
                : {}),
              lines: lines.slice(i, i + LINES_PER_MESSAGE),
            };
            bar?.update(Math.min(i + LINES_PER_MESSAGE, lines.length));
          }
        }
        let response: ImportUserResponse;
        try {
          response = await connection.governance.importUser(requests());
        } finally {
          bar?.stop();
        }
        out.document({
          subject: response.subject,
          sourceTenant: response.sourceTenant,
          sourceSubject: response.sourceSubject,
          idsRemapped: response.idsRemapped,
          records: Number(response.records),
          created: Object.fromEntries(Object.entries(response.created).map(([k, v]) => [k, Number(v)])),
          unchanged: Object.fromEntries(Object.entries(response.unchanged).map(([k, v]) => [k, Number(v)])),
          redactedFields: Number(response.redactedFields),
          validateOnly: response.validateOnly,
        });
        out.line(renderFields(importFields(response)));
        if (response.validateOnly) out.line(out.color.yellow('validate only: nothing was written.'));
      }),
    );
}
