import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { errors } from '@engram/errors';
import { checkRequestId } from '@engram/store';
import { parseForgetReceiptName } from './names.js';

/**
 * Validates an `EraseSubject` request (ingestion's and context's, on behalf of governance
 * `ForgetUser`): subject 1–256 characters, a `forgetReceipts/{id}` name, a valid cutoff time and a
 * request id. Returns the receipt id and the cutoff (epoch ms).
 */
export function checkEraseRequest(request: {
  readonly subject: string;
  readonly forgetReceipt: string;
  readonly cutoffTime?: Timestamp | undefined;
  readonly requestId: string;
}): { receiptId: string; cutoff: number } {
  if (request.subject === '') throw errors.fieldRequired('subject');
  if (Array.from(request.subject).length > 256)
    throw errors.fieldInvalid('subject', 'at most 256 characters');
  const receiptId = parseForgetReceiptName(request.forgetReceipt, 'forget_receipt');
  if (request.cutoffTime === undefined) throw errors.fieldRequired('cutoff_time');
  const cutoff = timestampDate(request.cutoffTime).getTime();
  const { nanos } = request.cutoffTime;
  if (!Number.isFinite(cutoff) || nanos < 0 || nanos > 999_999_999) {
    throw errors.fieldInvalid('cutoff_time', 'not a valid timestamp');
  }
  checkRequestId(request.requestId);
  return { receiptId, cutoff };
}
