import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import { activeTraceFields } from './trace-fields.js';

export type { Logger };

/**
 * Structured JSON logs. Lines carry identifiers (request id, method, code, duration, subject,
 * tenant), never message contents, memory text or secrets: the redaction below is a safety net,
 * not a licence to log payloads. A line written while a span is active carries its `trace_id` and
 * `span_id`, so one request can be followed across services.
 */
export function createLogger(
  options: { service: string; level: LevelWithSilent },
  destination?: DestinationStream,
): Logger {
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
    destination,
  );
}
