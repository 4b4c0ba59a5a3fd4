import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Lines carry identifiers (request id, method, code, duration, subject,
 * tenant), never message contents, memory text or secrets: the redaction below is a safety net,
 * not a licence to log payloads.
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
      redact: {
        paths: ['authorization', '*.authorization', 'token', '*.token', 'secret', '*.secret', 'headers'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
