import type {
  DescMessage,
  DescMethod,
  DescMethodBiDiStreaming,
  DescMethodClientStreaming,
  DescMethodServerStreaming,
  DescMethodUnary,
  MessageInitShape,
  MessageShape,
} from '@bufbuild/protobuf';
import { Code, ConnectError, type Transport } from '@connectrpc/connect';
import { createAsyncIterable } from '@connectrpc/connect/protocol';
import { EngramError, toEngramError } from './errors.js';
import { abortableSleep, retryDelayMs, type RetryPolicy } from './retry.js';

/** The plain-object form of a message's init (not a message instance), to pick fields from. */
export type FieldsOf<D extends DescMessage> = Exclude<MessageInitShape<D>, MessageShape<D>>;

/** What `new Headers()` takes (spelled so, because Node's types have no global `HeadersInit`). */
export type HeaderValues = ConstructorParameters<typeof Headers>[0];

/** Per-call options of every SDK method. */
export interface CallOptions {
  /** This call's deadline, ms, all attempts included. Default: the client's `timeoutMs`. */
  readonly timeoutMs?: number;
  /** Cancels the call (and any wait before a retry). */
  readonly signal?: AbortSignal;
  /** Extra request headers. */
  readonly headers?: HeaderValues;
}

/** How a {@link Caller} calls: filled in once by the client from its options. */
export interface CallerSettings {
  /** Default deadline per call, ms. */
  readonly timeoutMs: number;
  /** The retry policy, or undefined to never retry. */
  readonly retry: RetryPolicy | undefined;
  /** Whether the transport carries bidirectional streams (gRPC over HTTP/2; not fetch). */
  readonly bidiStreaming: boolean;
  /** Randomness of the retry jitter (tests fix it). */
  readonly random?: () => number;
  /** The wait before a retry (tests count it). */
  readonly sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

/**
 * A fresh `request_id`: a UUID v4 from `crypto.randomUUID`, or built from
 * `crypto.getRandomValues` where browsers withhold `randomUUID` (pages not served over HTTPS).
 */
export function newRequestId(): string {
  if (typeof globalThis.crypto.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * `input` with a `requestId` when its message has that field (the caller's own, else a new one),
 * so that every attempt of a retried write sends the same id and the server applies it once.
 */
export function withRequestId<I extends DescMessage>(
  schema: I,
  input: MessageInitShape<I>,
): { readonly input: MessageInitShape<I>; readonly requestId: string | undefined } {
  if (!('requestId' in schema.field)) return { input, requestId: undefined };
  const given = (input as { requestId?: unknown }).requestId;
  const requestId = typeof given === 'string' && given !== '' ? given : newRequestId();
  return { input: { ...input, requestId }, requestId };
}

/**
 * Calls methods over a transport with the client's deadline and retry policy, and turns every
 * failure into an {@link EngramError}. The namespaces (memories, sessions, …) call through it.
 */
export class Caller {
  readonly #settings: CallerSettings;
  readonly #sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;

  constructor(
    /** The authorized transport (shared with the raw clients). */
    readonly transport: Transport,
    settings: CallerSettings,
  ) {
    this.#settings = settings;
    this.#sleep = settings.sleep ?? abortableSleep;
  }

  /** Whether bidirectional streams (StreamIngestDocument) are available. */
  get bidiStreaming(): boolean {
    return this.#settings.bidiStreaming;
  }

  /** A unary call, retried per the policy with the same request (and `request_id`) each time. */
  async unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    input: MessageInitShape<I>,
    options: CallOptions = {},
  ): Promise<MessageShape<O>> {
    const { input: request, requestId } = withRequestId(method.input, input);
    return this.#retrying(options, requestId, async (remaining) => {
      const response = await this.transport.unary(
        method,
        options.signal,
        remaining,
        options.headers,
        request,
      );
      return response.message;
    });
  }

  /**
   * A server-streaming call. It is retried like a unary call only while nothing has arrived: once
   * a message was yielded, a failure ends the iteration with its error.
   */
  async *serverStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    input: MessageInitShape<I>,
    options: CallOptions = {},
  ): AsyncGenerator<MessageShape<O>, void, undefined> {
    const { input: request, requestId } = withRequestId(method.input, input);
    const clock = this.#clock(options);
    for (let attempt = 1; ; attempt++) {
      let received = false;
      try {
        const response = await this.transport.stream(
          method,
          options.signal,
          clock.remaining(),
          options.headers,
          createAsyncIterable([request]),
        );
        for await (const message of response.message) {
          received = true;
          yield message;
        }
        return;
      } catch (error) {
        if (received) throw toEngramError(error, requestId);
        await this.#waitOrThrow(error, attempt, clock.remaining(), options.signal, requestId);
      }
    }
  }

  /**
   * A bidirectional stream (never retried: the request stream is consumed as it is sent).
   * Fails with UNIMPLEMENTED on a transport without bidirectional streams.
   */
  async *bidiStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodBiDiStreaming<I, O>,
    input: AsyncIterable<MessageInitShape<I>>,
    requestId: string | undefined,
    options: CallOptions = {},
  ): AsyncGenerator<MessageShape<O>, void, undefined> {
    this.#requireRequestStreams(method, requestId);
    try {
      const response = await this.transport.stream(
        method,
        options.signal,
        this.#clock(options).remaining(),
        options.headers,
        input,
      );
      yield* response.message;
    } catch (error) {
      throw toEngramError(error, requestId);
    }
  }

  /**
   * A client-streaming call over a transport that carries request streams (gRPC over HTTP/2).
   * `input` makes a fresh request stream per attempt, so the call is retried like a unary call;
   * only use it for methods where a repeated call is harmless (ImportUser is idempotent).
   */
  async clientStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodClientStreaming<I, O>,
    input: () => AsyncIterable<MessageInitShape<I>>,
    options: CallOptions = {},
  ): Promise<MessageShape<O>> {
    this.#requireRequestStreams(method, undefined);
    return this.#retrying(options, undefined, async (remaining) => {
      const response = await this.transport.stream(
        method,
        options.signal,
        remaining,
        options.headers,
        input(),
      );
      let answer: MessageShape<O> | undefined;
      for await (const message of response.message) answer = message;
      if (answer === undefined) {
        throw new EngramError({ code: Code.Internal, message: `${method.name} ended without a response` });
      }
      return answer;
    });
  }

  /**
   * `call` within the call's deadline, retried per the policy with the wait the refusal asks for;
   * `call` gets the time left, ms.
   */
  async #retrying<T>(
    options: CallOptions,
    requestId: string | undefined,
    call: (remainingMs: number) => Promise<T>,
  ): Promise<T> {
    const clock = this.#clock(options);
    for (let attempt = 1; ; attempt++) {
      try {
        return await call(clock.remaining());
      } catch (error) {
        await this.#waitOrThrow(error, attempt, clock.remaining(), options.signal, requestId);
      }
    }
  }

  /** UNIMPLEMENTED unless the transport carries request streams (gRPC over HTTP/2; not fetch). */
  #requireRequestStreams(method: DescMethod, requestId: string | undefined): void {
    if (this.bidiStreaming) return;
    throw new EngramError({
      code: Code.Unimplemented,
      message: `${method.parent.typeName}.${method.name} needs a request stream, which this transport (fetch) cannot carry; use the gRPC transport of @engram/client/node`,
      requestId,
    });
  }

  /** The call's deadline: `remaining()` is the time left, ms (at least 1 while it lasts). */
  #clock(options: CallOptions): { remaining: () => number } {
    const timeoutMs = options.timeoutMs ?? this.#settings.timeoutMs;
    const started = performance.now();
    return { remaining: () => Math.max(1, Math.floor(timeoutMs - (performance.now() - started))) };
  }

  /** Waits before the next attempt when the policy allows one, else throws `error` as an EngramError. */
  async #waitOrThrow(
    error: unknown,
    attempt: number,
    remainingMs: number,
    signal: AbortSignal | undefined,
    requestId: string | undefined,
  ): Promise<void> {
    const policy = this.#settings.retry;
    const delay =
      policy === undefined || signal?.aborted === true
        ? undefined
        : retryDelayMs(error, attempt, remainingMs, policy, this.#settings.random);
    if (delay === undefined) throw toEngramError(error, requestId);
    try {
      await this.#sleep(delay, signal);
    } catch (aborted) {
      throw toEngramError(
        new ConnectError(
          'the call was cancelled before a retry',
          Code.Canceled,
          undefined,
          undefined,
          aborted,
        ),
        requestId,
      );
    }
  }
}
