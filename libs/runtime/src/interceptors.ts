import { randomUUID } from 'node:crypto';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { principalKey, type Authenticator } from './auth.js';
import { requestIdKey } from './context-keys.js';
import { EngramError, isEngramError, toConnectError } from './errors.js';
import type { Logger } from './logger.js';

/** Options of {@link createServerInterceptor}. */
export interface ServerInterceptorOptions {
  readonly authenticate: Authenticator;
  readonly logger: Logger;
  /** `ErrorInfo.domain` for a service's fully-qualified name, e.g. `engram.governance`. */
  readonly domainOf: (serviceTypeName: string) => string;
  /** Services reachable without a credential (health, reflection). */
  readonly publicServices: ReadonlySet<string>;
  /** Most messages a client stream may send. */
  readonly maxStreamMessages: number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Caps the number of messages a client stream may send (RESOURCE_EXHAUSTED beyond). */
async function* limitStream<T>(messages: AsyncIterable<T>, limit: number): AsyncGenerator<T> {
  let count = 0;
  for await (const message of messages) {
    count += 1;
    if (count > limit) {
      throw new EngramError(
        Code.ResourceExhausted,
        'STREAM_TOO_LONG',
        `client stream exceeds ${limit} messages`,
        { limit },
      );
    }
    yield message;
  }
}

/**
 * The one server interceptor, outermost first: request id, authentication (except public
 * services), client-stream limits, the error boundary, and one structured log line per call.
 */
export function createServerInterceptor(options: ServerInterceptorOptions): Interceptor {
  const { authenticate, logger, domainOf, publicServices, maxStreamMessages } = options;
  return (next) => async (req) => {
    const started = performance.now();
    const header = req.header.get('x-request-id');
    const requestId = header !== null && REQUEST_ID.test(header) ? header : randomUUID();
    req.contextValues.set(requestIdKey, requestId);
    const method = `${req.service.typeName}/${req.method.name}`;
    const domain = domainOf(req.service.typeName);
    let subject: string | undefined;
    let tenant: string | undefined;

    const finish = (code: Code | undefined, cause?: unknown) => {
      const line = {
        requestId,
        method,
        code: code === undefined ? 'OK' : Code[code],
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        subject,
        tenant,
      };
      if (cause !== undefined) logger.error({ ...line, err: cause }, 'rpc failed with an internal error');
      else logger.info(line, 'rpc');
    };
    const fail = (error: unknown): ConnectError => {
      // A handler that threw a plain AbortError because its signal fired really failed with the
      // signal's reason (DEADLINE_EXCEEDED, CANCELED, or shutdown).
      const cause: unknown =
        req.signal.aborted && !isEngramError(error) && !(error instanceof ConnectError)
          ? req.signal.reason
          : error;
      const mapped = toConnectError(cause, { domain, requestId });
      finish(mapped.error.code, mapped.internal ? cause : undefined);
      return mapped.error;
    };

    try {
      if (!publicServices.has(req.service.typeName)) {
        const principal = await authenticate(req.header.get('authorization'));
        subject = principal.subject;
        tenant = principal.tenantId;
        req.contextValues.set(principalKey, principal);
      }
      const limited: typeof req = req.stream
        ? { ...req, message: limitStream(req.message, maxStreamMessages) }
        : req;
      const res = await next(limited);
      res.header.set('x-request-id', requestId);
      if (!res.stream) {
        finish(undefined);
        return res;
      }
      const messages = res.message;
      async function* guarded() {
        try {
          yield* messages;
        } catch (error) {
          throw fail(error);
        }
        finish(undefined);
      }
      return { ...res, message: guarded() };
    } catch (error) {
      throw fail(error);
    }
  };
}
