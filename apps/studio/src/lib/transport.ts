import type { Interceptor, Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import { currentToken } from './session.js';

/** Adds the signed-in user's bearer token to every call (the services decide what it may do). */
const bearer: Interceptor = (next) => async (req) => {
  const token = currentToken();
  if (token !== undefined) req.header.set('authorization', `Bearer ${token}`);
  return next(req);
};

/**
 * The Connect transport to the services, on the origin that served the Studio (the all-in-one's
 * port speaks Connect over HTTP/1.1; decision 0035). Binary protobuf on the wire.
 */
export function studioTransport(baseUrl = globalThis.location.origin): Transport {
  return createConnectTransport({ baseUrl, useBinaryFormat: true, interceptors: [bearer] });
}
