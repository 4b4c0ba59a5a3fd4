import { createContextKey } from '@connectrpc/connect';

/** The request id of the current call: from `x-request-id` when well-formed, else generated. */
export const requestIdKey = createContextKey<string>('', { description: 'engram.request-id' });
