import { fromFlag, fromJson, optional, toFlag, toJson } from './codec.js';

/** How one record field is stored in its column: read from the stored value, written back to it. */
export interface Codec<V, S> {
  readonly read: (stored: S) => V;
  readonly write: (value: V) => S;
  /** Leave the field out of the record (rather than present and undefined) when it reads as undefined. */
  readonly omitUndefined?: boolean;
}

/** Whether `A` and `B` are the same type (a column holding the field's value as is). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/**
 * Where one field of `Row`'s record lives: a column holding the value as is, or a column and the
 * {@link Codec} between the field's value and what the column holds.
 */
type FieldColumn<Row, V> = {
  [C in keyof Row & string]: Same<Row[C], V> extends true
    ? C | readonly [C, Codec<V, Row[C]>]
    : readonly [C, Codec<V, Row[C]>];
}[keyof Row & string];

/** Every field of `Rec` (optional ones too), in column order, with its column of `Row`. */
export type RowSpec<Rec, Row> = { readonly [K in keyof Required<Rec>]: FieldColumn<Row, Rec[K]> };

/** Both directions of a table's mapping, derived from one {@link RowSpec}. */
export interface RowCodec<Rec, Row> {
  readonly toRecord: (row: Row) => Rec;
  readonly toRow: (record: Rec) => Row;
}

/** A field stored in its column unchanged. */
const SAME: Codec<unknown, unknown> = { read: (stored) => stored, write: (value) => value };

/**
 * The mapping between a table's rows and its records, declared once: each record field names its
 * column (and codec), and reading a row and writing a record are both derived from that, so the
 * two directions cannot drift apart. Rows are written with their columns in the order of `spec`.
 */
export function rowCodec<Rec, Row>(spec: RowSpec<Rec, Row>): RowCodec<Rec, Row> {
  const fields = Object.entries(spec).map(([field, column]) => {
    const [name, codec] =
      typeof column === 'string' ? [column, SAME] : (column as readonly [string, Codec<unknown, unknown>]);
    return { field, name, codec };
  });
  return {
    toRecord: (row) => {
      const record: Record<string, unknown> = {};
      for (const { field, name, codec } of fields) {
        const value = codec.read((row as Record<string, unknown>)[name]);
        if (value !== undefined || codec.omitUndefined !== true) record[field] = value;
      }
      return record as Rec;
    },
    toRow: (record) => {
      const row: Record<string, unknown> = {};
      for (const { field, name, codec } of fields) {
        row[name] = codec.write((record as Record<string, unknown>)[field]);
      }
      return row as Row;
    },
  };
}

/** A string column holding one of the values of `V` (an enum's names). */
export function enumOf<V extends string>(): Codec<V, string> {
  return SAME as Codec<V, string>;
}

/** A 0/1 column holding a boolean. */
export const flag: Codec<boolean, number> = { read: fromFlag, write: toFlag };

/** A nullable column holding an optional field: NULL reads as undefined, undefined writes NULL. */
export function nullable<V>(): Codec<V | undefined, V | null> {
  return { read: optional, write: (value) => value ?? null };
}

/** A JSON text column; a new `fallback()` when it holds JSON null. */
export function json<V>(fallback: () => V): Codec<V, string> {
  return { read: (text) => fromJson<V>(text) ?? fallback(), write: toJson };
}

/** A JSON text column holding a string map (metadata); {} when it holds JSON null. */
export const stringMap: Codec<Readonly<Record<string, string>>, string> = json(() => ({}));

/** A nullable JSON text column holding an optional field: NULL reads as undefined, undefined writes NULL. */
export function nullableJson<V>(
  options: { readonly omitUndefined?: boolean } = {},
): Codec<V | undefined, string | null> {
  return {
    read: (text) => fromJson<V>(text),
    write: (value) => (value === undefined ? null : toJson(value)),
    ...options,
  };
}

/** A text column of at most `max` UTF-16 units: longer values are cut when written. */
export function clipped(max: number): Codec<string, string> {
  return { read: (text) => text, write: (text) => text.slice(0, max) };
}
