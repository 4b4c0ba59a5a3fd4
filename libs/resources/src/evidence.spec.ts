import { describe, expect, it } from '@jest/globals';
import { evidenceFromNames, evidenceNames } from './index.js';

const S = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const T = '01BX5ZZKBKACTAV9WEVGEMMVRZ';
const M1 = '01BX5ZZKBKACTAV9WEVGEMMVS0';
const M2 = '01BX5ZZKBKACTAV9WEVGEMMVS1';

describe('evidence names', () => {
  it('stores the messages and MemCell of one session as ids and gives the names back', () => {
    const given = {
      messages: [`sessions/${S}/messages/${M1}`, `sessions/${S}/messages/${M2}`],
      memCell: `sessions/${S}/memCells/${M2}`,
      chunks: [`documents/${T}/chunks/${M1}`],
      excerpt: 'quote',
    };
    const stored = evidenceFromNames(given);
    expect(stored).toEqual({
      messageIds: [M1, M2],
      sessionId: S,
      memCellId: M2,
      chunkIds: [`documents/${T}/chunks/${M1}`],
      excerpt: 'quote',
    });
    expect(evidenceNames(stored)).toEqual(given);
  });

  it('keeps names of several sessions as given', () => {
    const given = {
      messages: [`sessions/${S}/messages/${M1}`, `sessions/${T}/messages/${M2}`],
      memCell: '',
      chunks: [],
      excerpt: '',
    };
    const stored = evidenceFromNames(given);
    expect(stored.sessionId).toBeUndefined();
    expect(evidenceNames(stored)).toEqual(given);
  });

  it('names the ids an extraction stored with their session', () => {
    expect(evidenceNames({ messageIds: [M1], sessionId: S, memCellId: M2, chunkIds: [] })).toEqual({
      messages: [`sessions/${S}/messages/${M1}`],
      memCell: `sessions/${S}/memCells/${M2}`,
      chunks: [],
      excerpt: '',
    });
  });
});
