import { getEncoding, type Tiktoken } from 'js-tiktoken';

let encoding: Tiktoken | undefined;

/**
 * Tokens of `text` in `o200k_base`, the model-independent count ingestion stores (boundary token
 * caps, compaction thresholds, chunk size estimates). Context assembly recounts with the target
 * model's own encoding.
 */
export function countTokens(text: string): number {
  encoding ??= getEncoding('o200k_base');
  return encoding.encode(text).length;
}
