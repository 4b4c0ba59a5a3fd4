import { Code, ConnectError, type Transport } from '@connectrpc/connect';
import type { HeaderValues } from './caller.js';

/** Where a client's bearer token comes from: a fixed token, or a function asked on every request. */
export type TokenProvider = () => string | Promise<string>;

/** The token of each request: `tokenProvider` wins over `token`; neither sends no header. */
export function tokenSource(
  token: string | undefined,
  tokenProvider: TokenProvider | undefined,
): TokenProvider | undefined {
  if (tokenProvider !== undefined) return tokenProvider;
  if (token !== undefined) return () => token;
  return undefined;
}

/** `header` plus `authorization: Bearer <token>` from `provider`, asked now (so short-lived tokens refresh). */
async function authorizedHeader(header: HeaderValues, provider: TokenProvider): Promise<Headers> {
  let token: string;
  try {
    token = await provider();
  } catch (error) {
    throw new ConnectError('the tokenProvider failed', Code.Unauthenticated, undefined, undefined, error);
  }
  const headers = new Headers(header);
  headers.set('authorization', `Bearer ${token}`);
  return headers;
}

/**
 * `inner` with the bearer token on every request. A wrapper rather than an interceptor, so it
 * also authorizes a transport the caller built (and the raw clients, which share it).
 */
export function authorizedTransport(inner: Transport, provider: TokenProvider | undefined): Transport {
  if (provider === undefined) return inner;
  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      return inner.unary(
        method,
        signal,
        timeoutMs,
        await authorizedHeader(header, provider),
        input,
        contextValues,
      );
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      return inner.stream(
        method,
        signal,
        timeoutMs,
        await authorizedHeader(header, provider),
        input,
        contextValues,
      );
    },
  };
}
