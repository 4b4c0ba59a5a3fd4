import pc from 'picocolors';

/** The colour functions the human output uses (all identity when colour is off). */
export type Colors = ReturnType<typeof pc.createColors>;

/** Where a command writes, and how: human text (optionally coloured) or one JSON document. */
export interface Output {
  readonly json: boolean;
  readonly color: Colors;
  /** Writes a line of human output to stdout (ignored with `--json`). */
  readonly line: (text?: string) => void;
  /** Writes a note to stderr (kept with `--json`: scripts read stdout only). */
  readonly note: (text: string) => void;
  /** Writes the one JSON document of a `--json` run (ignored without `--json`). */
  readonly document: (value: unknown) => void;
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/**
 * Colour only for a terminal, never with NO_COLOR (https://no-color.org) or for JSON; FORCE_COLOR
 * forces it on. Decided here rather than by picocolors' own detection, which also turns colour on
 * under CI.
 */
export function colorEnabled(
  env: Readonly<Record<string, string | undefined>>,
  stream: { isTTY?: boolean },
  json: boolean,
): boolean {
  if (json) return false;
  if (env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '') return false;
  if (env['FORCE_COLOR'] !== undefined && env['FORCE_COLOR'] !== '0') return true;
  return stream.isTTY === true && env['TERM'] !== 'dumb';
}

/** JSON.stringify that writes bigints (int64 fields) as strings. */
export function stringifyJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

export function createOutput(options: {
  json: boolean;
  env: Readonly<Record<string, string | undefined>>;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}): Output {
  const { json, stdout, stderr } = options;
  const color = pc.createColors(colorEnabled(options.env, stdout, json));
  return {
    json,
    color,
    stdout,
    stderr,
    line: (text = '') => {
      if (!json) stdout.write(`${text}\n`);
    },
    note: (text) => {
      stderr.write(`${text}\n`);
    },
    document: (value) => {
      if (json) stdout.write(`${stringifyJson(value)}\n`);
    },
  };
}
