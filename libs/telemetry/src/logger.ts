import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { activeTraceFields } from './trace-fields.js';

export type { Logger };

/** How log lines are written: JSON lines, human-readable lines, or pretty on a terminal only. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** The format `auto` stands for: pretty when standard output is a terminal, JSON lines otherwise. */
export function resolveLogFormat(
  format: LogFormat,
  isTTY: boolean = process.stdout.isTTY,
): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  return isTTY ? 'pretty' : 'json';
}

/**
 * Structured logs. Lines carry identifiers (request id, method, code, duration, subject,
 * tenant), never message contents, memory text or secrets: the redaction below is a safety net,
 * not a licence to log payloads. A line written while a span is active carries its `trace_id` and
 * `span_id`, so one request can be followed across services. Without an explicit destination the
 * lines go to standard output: JSON lines for collectors, or (format `pretty`, or `auto` on a
 * terminal, as with `npm start`) one readable line each, with the same fields.
 */
export function createLogger(
  options: { service: string; level: LevelWithSilent; format?: LogFormat },
  destination?: DestinationStream,
): Logger {
  const pretty = destination === undefined && resolveLogFormat(options.format ?? 'auto') === 'pretty';
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: activeTraceFields,
      redact: {
        paths: ['authorization', '*.authorization', 'token', '*.token', 'secret', '*.secret', 'headers'],
        censor: '[redacted]',
      },
    },
    pretty
      ? PinoPretty({ sync: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : destination,
  );
}
