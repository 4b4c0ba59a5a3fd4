import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { toJson } from '@bufbuild/protobuf';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { MultiBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { DocumentSchema, DocumentState, IngestPhase } from '@engram/contracts/ingestion';
import type {
  IngestDocumentHeaderSchema,
  StreamIngestDocumentRequestSchema,
  IngestDocumentResponse,
} from '@engram/contracts/ingestion';
import { action } from '../actions.js';
import type { Connection } from '../connection.js';
import type { CliRuntime } from '../context.js';
import { EXIT, cliErrorFromCall, usageError } from '../errors.js';
import { enumLabel, formatBytes, mimeTypeOf, parts, shortPath } from '../format.js';

/** Files larger than this go up with StreamIngestDocument (in parts, with server-side progress). */
export const STREAM_THRESHOLD_BYTES = 2 * 1024 * 1024;
const PART_BYTES = 256 * 1024;
const INDEX_WAIT_SECONDS = 60;

/** What happened to one path. */
export interface FileResult {
  readonly path: string;
  readonly status: 'ingested' | 'deduplicated' | 'skipped' | 'failed';
  readonly note?: string;
  readonly document?: unknown;
  readonly name?: string;
  readonly chunksWritten?: number;
  readonly indexComplete?: boolean;
  readonly streamed?: boolean;
}

/**
 * Expands files and directories (recursively, skipping dot-entries and node_modules) in sorted
 * order. A path named on the command line is taken as given; inside a directory, a symbolic link
 * is followed only when its target stays inside that directory (`outside` lists the others, so a
 * link to `~/.ssh` in a notes folder is never uploaded), and each directory is walked once (a link
 * cycle ends).
 */
export async function expandPaths(
  paths: readonly string[],
): Promise<{ files: string[]; missing: string[]; outside: string[] }> {
  const files: string[] = [];
  const missing: string[] = [];
  const outside: string[] = [];
  const walked = new Set<string>();
  const within = (real: string, root: string) => real === root || real.startsWith(root + sep);
  /** `root`: the real path of the directory named on the command line (undefined: a named path). */
  const walk = async (path: string, root: string | undefined): Promise<void> => {
    let info;
    let real;
    try {
      info = await stat(path);
      real = await realpath(path);
    } catch {
      if (root === undefined) missing.push(path);
      return;
    }
    if (root !== undefined && !within(real, root)) {
      outside.push(path);
      return;
    }
    if (info.isDirectory()) {
      if (walked.has(real)) return;
      walked.add(real);
      const entries = (await readdir(path)).sort();
      for (const entry of entries) {
        if (entry.startsWith('.') || entry === 'node_modules') continue;
        await walk(join(path, entry), root ?? real);
      }
    } else if (info.isFile()) {
      files.push(path);
    }
  };
  for (const path of paths) await walk(path, undefined);
  return { files, missing, outside };
}

type Header = MessageInitShape<typeof IngestDocumentHeaderSchema>;

function documentOf(path: string, mimeType: string) {
  return { displayName: basename(path), mimeType, sourceUri: pathToFileURL(resolve(path)).href };
}

async function ingestOne(
  connection: Connection,
  path: string,
  mimeType: string,
  content: Uint8Array,
  wait: boolean,
  onBytes: (bytes: number) => void,
): Promise<{ result: IngestDocumentResponse; streamed: boolean }> {
  const timeoutMs = (INDEX_WAIT_SECONDS + 60) * 1000;
  const indexWaitTimeout = { seconds: BigInt(INDEX_WAIT_SECONDS) };
  if (content.length <= STREAM_THRESHOLD_BYTES) {
    const result = await connection.ingestion.ingestDocument(
      { document: documentOf(path, mimeType), content, waitForIndex: wait, indexWaitTimeout },
      { timeoutMs },
    );
    onBytes(content.length);
    return { result, streamed: false };
  }
  // eslint-disable-next-line @typescript-eslint/require-await -- connect takes an AsyncIterable of requests
  async function* requests(): AsyncGenerator<MessageInitShape<typeof StreamIngestDocumentRequestSchema>> {
    const head: Header = {
      document: documentOf(path, mimeType),
      expectedSizeBytes: BigInt(content.length),
      waitForIndex: wait,
      indexWaitTimeout,
    };
    yield { payload: { case: 'header', value: head } };
    for (const data of parts(content, PART_BYTES)) yield { payload: { case: 'part', value: { data } } };
  }
  let reported = 0;
  for await (const response of connection.ingestion.streamIngestDocument(requests(), { timeoutMs })) {
    const event = response.event;
    if (event.case === 'progress') {
      const received = Number(event.value.bytesReceived);
      if (event.value.phase === IngestPhase.RECEIVING && received > reported) {
        onBytes(received - reported);
        reported = received;
      }
    } else if (event.case === 'result') {
      onBytes(content.length - reported);
      return { result: event.value, streamed: true };
    }
  }
  throw new Error('StreamIngestDocument ended without a result');
}

/** The line printed for one file. */
export function resultLine(result: FileResult): string {
  switch (result.status) {
    case 'skipped':
      return `- ${result.path}: skipped (${result.note ?? ''})`;
    case 'failed':
      return `✗ ${result.path}: ${result.note ?? 'failed'}`;
    case 'deduplicated':
      return `= ${result.path} → ${result.name ?? '?'} (already ingested, unchanged)`;
    case 'ingested':
      return `✓ ${result.path} → ${result.name ?? '?'} (${result.chunksWritten ?? 0} chunks${result.indexComplete === true ? ', indexed' : ', indexing'}${result.streamed === true ? ', streamed' : ''})`;
  }
}

/** `engram ingest`: uploads Markdown, text and HTML files (directories recursively). */
export function registerIngest(program: Command, io: CliRuntime): void {
  program
    .command('ingest')
    .description('ingest .md, .txt and .html files (directories recursively); other files are skipped')
    .argument('<paths...>', 'files or directories')
    .option('--no-wait', 'return once stored, without waiting for the index')
    .action(
      action(io, async ({ out, connect, setExitCode }, command, paths) => {
        const { wait } = command.opts<{ wait: boolean }>();
        const { files, missing, outside } = await expandPaths(paths as string[]);
        if (missing.length > 0) throw usageError(`no such file or directory: ${missing.join(', ')}`);
        const results: FileResult[] = outside.map((path) => ({
          path,
          status: 'skipped' as const,
          note: 'symbolic link out of the given directory',
        }));
        const plan: { path: string; mimeType: string; size: number }[] = [];
        for (const path of files) {
          const mimeType = mimeTypeOf(path);
          if (mimeType === undefined) {
            results.push({ path, status: 'skipped', note: 'not .md, .txt or .html' });
          } else {
            plan.push({ path, mimeType, size: (await stat(path)).size });
          }
        }
        for (const result of results) out.line(resultLine(result));
        const connection = await connect();
        const total = plan.reduce((sum, f) => sum + f.size, 0);
        // A bar only on a terminal (both streams), never with --json.
        const showBar = !out.json && io.stdout.isTTY === true && io.stderr.isTTY === true;
        const bars = showBar
          ? new MultiBar(
              {
                format: ' {bar} {percentage}% | {value}/{total} bytes | {file}',
                hideCursor: true,
                clearOnComplete: true,
                stream: io.stderr,
              },
              Presets.shades_classic,
            )
          : undefined;
        const bar = bars?.create(Math.max(total, 1), 0, { file: '' });
        const print = (line: string) => {
          if (bars !== undefined) bars.log(`${line}\n`);
          else out.line(line);
        };
        try {
          for (const file of plan) {
            bar?.update({ file: shortPath(file.path) });
            let result: FileResult;
            try {
              const content = await readFile(file.path);
              const { result: answer, streamed } = await ingestOne(
                connection,
                file.path,
                file.mimeType,
                content,
                wait,
                (bytes) => bar?.increment(bytes),
              );
              const document = answer.document;
              const failed = document?.state === DocumentState.FAILED;
              result = {
                path: file.path,
                status: failed ? 'failed' : answer.deduplicated ? 'deduplicated' : 'ingested',
                ...(failed
                  ? { note: `${enumLabel(DocumentState, document.state)}: ${document.failureMessage}` }
                  : {}),
                name: document?.name ?? '',
                document: document === undefined ? null : toJson(DocumentSchema, document),
                chunksWritten: answer.chunksWritten,
                indexComplete: answer.indexComplete,
                streamed,
              };
            } catch (error) {
              const failure = cliErrorFromCall(error, connection.addr);
              // Not reachable or not allowed: every other file would fail the same way.
              if (failure.exitCode !== EXIT.SERVER_ERROR) throw failure;
              result = { path: file.path, status: 'failed', note: failure.message };
              bar?.increment(file.size);
            }
            results.push(result);
            print(resultLine(result));
          }
        } finally {
          bars?.stop();
        }
        const count = (status: FileResult['status']) => results.filter((r) => r.status === status).length;
        const summary = {
          ingested: count('ingested'),
          deduplicated: count('deduplicated'),
          skipped: count('skipped'),
          failed: count('failed'),
          bytes: total,
        };
        out.document({ files: results, summary });
        out.line(
          `${summary.ingested} ingested, ${summary.deduplicated} unchanged, ${summary.skipped} skipped, ${summary.failed} failed (${formatBytes(total)})`,
        );
        if (summary.failed > 0) setExitCode(EXIT.SERVER_ERROR);
      }),
    );
}
