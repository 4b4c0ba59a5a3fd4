import { describe, expect, it } from '@jest/globals';
import { clipped, enumOf, flag, json, nullable, nullableJson, rowCodec, stringMap } from './row-codec.js';

interface Thing {
  readonly id: string;
  readonly kind: 'A' | 'B';
  readonly enabled: boolean;
  readonly note: string;
  readonly tags: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly closedAt?: number;
  readonly value?: unknown;
}

interface ThingRow {
  id: string;
  kind: string;
  enabled: number;
  note: string;
  tags_json: string;
  labels_json: string;
  closed_at: number | null;
  value_json: string | null;
}

const things = rowCodec<Thing, ThingRow>({
  id: 'id',
  kind: ['kind', enumOf<'A' | 'B'>()],
  enabled: ['enabled', flag],
  note: ['note', clipped(5)],
  tags: ['tags_json', json<readonly string[]>(() => [])],
  labels: ['labels_json', stringMap],
  closedAt: ['closed_at', nullable<number>()],
  value: ['value_json', nullableJson<unknown>({ omitUndefined: true })],
});

/** A row whose nullable and JSON columns all hold (JSON) null. */
const NULLS: ThingRow = {
  id: 't2',
  kind: 'A',
  enabled: 0,
  note: '',
  tags_json: 'null',
  labels_json: 'null',
  closed_at: null,
  value_json: null,
};

describe('rowCodec', () => {
  it('writes every column, in the order of the spec, and reads the record back', () => {
    const thing: Thing = {
      id: 't1',
      kind: 'B',
      enabled: true,
      note: 'hi',
      tags: ['x'],
      labels: { a: '1' },
      closedAt: 7,
      value: null,
    };
    const row = things.toRow(thing);
    expect(Object.keys(row)).toEqual([
      'id',
      'kind',
      'enabled',
      'note',
      'tags_json',
      'labels_json',
      'closed_at',
      'value_json',
    ]);
    expect(row).toEqual({
      id: 't1',
      kind: 'B',
      enabled: 1,
      note: 'hi',
      tags_json: '["x"]',
      labels_json: '{"a":"1"}',
      closed_at: 7,
      value_json: 'null',
    });
    expect(things.toRecord(row)).toEqual(thing);
  });

  it('maps NULL to a present undefined field, or leaves the field out when asked', () => {
    const record = things.toRecord(NULLS);
    expect(Object.keys(record)).toEqual(['id', 'kind', 'enabled', 'note', 'tags', 'labels', 'closedAt']);
    expect(record).toMatchObject({ enabled: false, tags: [], labels: {}, closedAt: undefined });
    expect(things.toRow(record)).toMatchObject({ closed_at: null, value_json: null });
  });

  it('cuts clipped text when writing and gives every record its own fallback', () => {
    expect(
      things.toRow({ id: 't3', kind: 'A', enabled: false, note: 'abcdefgh', tags: [], labels: {} }).note,
    ).toBe('abcde');
    expect(things.toRecord(NULLS).tags).not.toBe(things.toRecord(NULLS).tags);
  });
});
