import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  ForgetReceiptState,
  type ForgetReceiptSchema,
  type ForgetUserRequest,
} from '@engram/contracts/governance';
import { errors } from '@engram/runtime';
import {
  checkRequestId,
  forgetReceiptName,
  type ForgetReceiptRecord,
  type ForgetReceiptState as StoredState,
} from '@engram/store';
import { errorReasonOf } from './jobs-api.js';
import { checkReason } from './memory-api.js';

const MAX_SUBJECT_CHARS = 256;

const STATES: Record<StoredState, ForgetReceiptState> = {
  PENDING: ForgetReceiptState.PENDING,
  COMPLETED: ForgetReceiptState.COMPLETED,
};
/** The receipt states of ListForgetReceipts' filter, as stored. */
export const RECEIPT_STATE_NAMES: Partial<Record<ForgetReceiptState, StoredState>> = {
  [ForgetReceiptState.PENDING]: 'PENDING',
  [ForgetReceiptState.COMPLETED]: 'COMPLETED',
};

/** ForgetUser's fields, checked (the caller's right to forget the subject aside). */
export function checkForgetUserRequest(request: ForgetUserRequest): void {
  if (request.subject === '') throw errors.fieldRequired('subject');
  if (Array.from(request.subject).length > MAX_SUBJECT_CHARS) {
    throw errors.fieldInvalid('subject', `at most ${MAX_SUBJECT_CHARS} characters`);
  }
  checkReason(request.reason);
  checkRequestId(request.requestId);
}

/** A stored receipt as the API's `ForgetReceipt`. */
export function receiptMessage(r: ForgetReceiptRecord): MessageInitShape<typeof ForgetReceiptSchema> {
  const c = r.counts;
  return {
    name: forgetReceiptName(r.id),
    subject: r.subject,
    requestedBy: r.requestedBy,
    reason: r.reason,
    requestId: r.requestId,
    state: STATES[r.state],
    counts: {
      memories: BigInt(c.memories),
      revisionsRedacted: BigInt(c.revisionsRedacted),
      revisionActorsRedacted: BigInt(c.revisionActorsRedacted),
      extractionJobs: BigInt(c.extractionJobs),
      documents: BigInt(c.documents),
      chunks: BigInt(c.chunks),
      sessions: BigInt(c.sessions),
      messages: BigInt(c.messages),
      memCells: BigInt(c.memCells),
      sessionStates: BigInt(c.sessionStates),
      vectorPoints: BigInt(c.vectorPoints),
    },
    ...(r.state === 'PENDING' && r.lastErrorReason !== ''
      ? { lastError: { reason: errorReasonOf(r.lastErrorReason), message: r.lastError } }
      : {}),
    createTime: timestampFromMs(r.createdAt),
    ...(r.completedAt !== undefined ? { completeTime: timestampFromMs(r.completedAt) } : {}),
  };
}
