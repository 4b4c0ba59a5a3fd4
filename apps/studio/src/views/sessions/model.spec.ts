import { describe, expect, it } from '@jest/globals';
import {
  buildTimeline,
  candidateRows,
  cellOf,
  jobsByMemCell,
  messageAnchor,
  needsMorePages,
  outcomeTone,
  parseSequence,
  sessionId,
  sessionName,
  sessionStateName,
  stripPrefix,
} from './model.js';

const msg = (n: number) => ({ sequence: BigInt(n), text: `m${String(n)}` });
const cell = (name: string, first: number, last: number) => ({
  name,
  firstSequence: BigInt(first),
  lastSequence: BigInt(last),
});

describe('resource names', () => {
  it('builds and reads session names', () => {
    expect(sessionName('01J')).toBe('sessions/01J');
    expect(sessionStateName('01J')).toBe('sessions/01J/state');
    expect(sessionId('sessions/01J')).toBe('01J');
    expect(sessionId('sessions/01J/memCells/02K')).toBe('01J');
    expect(sessionId('memories/01J')).toBe('');
  });

  it('parses the deep-link sequence', () => {
    expect(parseSequence('7')).toBe(7n);
    expect(parseSequence(' 12 ')).toBe(12n);
    expect(parseSequence('0')).toBeUndefined();
    expect(parseSequence('-3')).toBeUndefined();
    expect(parseSequence('3.5')).toBeUndefined();
    expect(parseSequence('abc')).toBeUndefined();
    expect(parseSequence(null)).toBeUndefined();
    expect(parseSequence(undefined)).toBeUndefined();
    expect(messageAnchor(42n)).toBe('message-42');
  });
});

describe('buildTimeline', () => {
  it('draws a boundary after the last message of each MemCell and marks the open tail', () => {
    const cells = [cell('c2', 4, 5), cell('c1', 1, 3)];
    const items = buildTimeline([msg(1), msg(2), msg(3), msg(4), msg(5), msg(6), msg(7)], cells);
    expect(
      items.map((i) =>
        i.kind === 'message'
          ? `m${String(i.message.sequence)}:${i.cell?.name ?? '-'}`
          : i.kind === 'boundary'
            ? `|${i.cell.name}`
            : `open@${String(i.fromSequence)}`,
      ),
    ).toEqual(['m1:c1', 'm2:c1', 'm3:c1', '|c1', 'm4:c2', 'm5:c2', '|c2', 'open@6', 'm6:-', 'm7:-']);
  });

  it('sorts messages, drops repeats and draws no boundary whose last message is not loaded', () => {
    const items = buildTimeline([msg(3), msg(1), msg(2), msg(2)], [cell('c1', 1, 5)]);
    expect(items.map((i) => i.kind)).toEqual(['message', 'message', 'message']);
    expect(items.map((i) => (i.kind === 'message' ? Number(i.message.sequence) : 0))).toEqual([1, 2, 3]);
  });

  it('shows a single-message MemCell and an empty session', () => {
    expect(buildTimeline([msg(1)], [cell('c1', 1, 1)]).map((i) => i.kind)).toEqual(['message', 'boundary']);
    expect(buildTimeline([], [cell('c1', 1, 1)])).toEqual([]);
  });

  it('finds the MemCell of a sequence', () => {
    const cells = [cell('a', 1, 3), cell('b', 4, 4), cell('c', 5, 9)];
    expect(cellOf(cells, 1n)?.name).toBe('a');
    expect(cellOf(cells, 4n)?.name).toBe('b');
    expect(cellOf(cells, 9n)?.name).toBe('c');
    expect(cellOf(cells, 10n)).toBeUndefined();
    const none: { name: string; firstSequence: bigint; lastSequence: bigint }[] = [];
    expect(cellOf(none, 1n)).toBeUndefined();
  });
});

describe('extraction jobs', () => {
  it('groups jobs by MemCell keeping the order and dropping repeats', () => {
    const jobs = [
      { name: 'extractionJobs/3', memCell: 'sessions/s/memCells/b' },
      { name: 'extractionJobs/2', memCell: 'sessions/s/memCells/a' },
      { name: 'extractionJobs/1', memCell: 'sessions/s/memCells/a' },
      { name: 'extractionJobs/2', memCell: 'sessions/s/memCells/a' },
    ];
    const grouped = jobsByMemCell(jobs);
    expect([...grouped.keys()]).toEqual(['sessions/s/memCells/b', 'sessions/s/memCells/a']);
    expect(grouped.get('sessions/s/memCells/a')?.map((j) => j.name)).toEqual([
      'extractionJobs/2',
      'extractionJobs/1',
    ]);
    expect(grouped.get('sessions/s/memCells/none')).toBeUndefined();
  });

  it('zips candidates with their decisions by candidate index', () => {
    const rows = candidateRows(
      ['tea', 'city'],
      [
        { candidateIndex: 1, outcome: 'REJECTED' },
        { candidateIndex: 0, outcome: 'ACCEPTED' },
        { candidateIndex: 4, outcome: 'QUARANTINED' },
      ],
    );
    expect(rows.map((r) => [r.index, r.candidate, r.decision?.outcome])).toEqual([
      [0, 'tea', 'ACCEPTED'],
      [1, 'city', 'REJECTED'],
      [4, undefined, 'QUARANTINED'],
    ]);
    expect(candidateRows(['x'], [])).toEqual([{ index: 0, candidate: 'x', decision: undefined }]);
  });

  it('colours outcomes and strips enum prefixes', () => {
    expect(outcomeTone('ACCEPTED')).toBe('ok');
    expect(outcomeTone('SUPERSEDED')).toBe('ok');
    expect(outcomeTone('REJECTED')).toBe('warn');
    expect(outcomeTone('QUARANTINED')).toBe('info');
    expect(outcomeTone('MERGED_DUPLICATE')).toBe('plain');
    expect(stripPrefix('DECISION_OUTCOME_ACCEPTED', 'DECISION_OUTCOME_')).toBe('ACCEPTED');
    expect(stripPrefix('—', 'DECISION_OUTCOME_')).toBe('—');
  });
});

describe('needsMorePages', () => {
  const loaded = [msg(1), msg(2), msg(3)];
  it('asks for more only while the target is beyond the loaded messages and pages remain', () => {
    expect(needsMorePages(loaded, 7n, true)).toBe(true);
    expect(needsMorePages(loaded, 7n, false)).toBe(false);
    expect(needsMorePages(loaded, 2n, true)).toBe(false);
    expect(needsMorePages(loaded, undefined, true)).toBe(false);
    expect(needsMorePages([], 1n, true)).toBe(true);
  });
});
