/**
 * Rule `evidence`: evidence ids are well formed (ULIDs, as the store assigns them); a candidate
 * from governance's extractors cites the messages (or the MemCell) it came from; and, when the
 * lookups can tell, every reference exists and is visible to the caller.
 */
import type { HardRule } from './types.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

export const evidenceRule: HardRule = {
  name: 'evidence',
  async evaluate(candidate, ctx) {
    const { messageIds, memCellId, chunkIds = [] } = candidate.evidence;
    for (const [field, ids] of [
      ['evidence.messages', messageIds],
      ['evidence.mem_cell', memCellId === undefined ? [] : [memCellId]],
      ['evidence.chunks', chunkIds],
    ] as const) {
      if (ids.some((id) => !ULID.test(id))) {
        return { verdict: 'REJECTED', field, note: `${field} holds a malformed id` };
      }
    }
    if (ctx.mode === 'extract' && messageIds.length === 0 && memCellId === undefined) {
      return {
        verdict: 'REJECTED',
        field: 'evidence.messages',
        note: 'an extracted candidate must cite the messages it came from',
      };
    }
    const references = messageIds.length + chunkIds.length + (memCellId === undefined ? 0 : 1);
    if (references === 0) return { verdict: 'PASSED', note: 'no evidence given' };
    const missing = await ctx.batch.missingEvidence(candidate.evidence);
    if (missing === undefined) return { verdict: 'PASSED', note: `${references} references, well formed` };
    if (missing.length > 0) {
      return {
        verdict: 'REJECTED',
        field: 'evidence',
        note: `${missing.length} of ${references} evidence references do not exist or are not visible`,
      };
    }
    return { verdict: 'PASSED', note: `${references} references, all found` };
  },
};
