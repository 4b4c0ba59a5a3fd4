import { describe, expect, it } from '@jest/globals';
import { MemoryType } from '@engram/contracts/governance';
import { subjectOfToken } from './auth.js';
import {
  enumLabel,
  formatBytes,
  formatScore,
  formatTime,
  memoryContent,
  mimeTypeOf,
  oneLine,
  parseKind,
  parsePositiveInt,
  parts,
  renderFields,
  renderTable,
  resourceName,
  upperSnake,
} from './format.js';
import { colorEnabled, stringifyJson } from './output.js';

describe('enumLabel', () => {
  it('names a value without its prefix and shows UNSPECIFIED as a dash', () => {
    expect(enumLabel(MemoryType, MemoryType.FACT)).toBe('FACT');
    expect(enumLabel(MemoryType, MemoryType.UNSPECIFIED)).toBe('-');
    expect(enumLabel(MemoryType, 99)).toBe('99');
  });
});

describe('upperSnake', () => {
  it('spells connect codes the gRPC way', () => {
    expect(upperSnake('FailedPrecondition')).toBe('FAILED_PRECONDITION');
    expect(upperSnake('Unauthenticated')).toBe('UNAUTHENTICATED');
  });
});

describe('oneLine', () => {
  it('collapses whitespace and cuts with an ellipsis', () => {
    expect(oneLine('a\n\n  b\tc')).toBe('a b c');
    expect(oneLine('abcdefghij', 5)).toBe('abcd…');
    expect(oneLine('abcde', 5)).toBe('abcde');
  });
});

describe('numbers and times', () => {
  it('formats scores, bytes and timestamps', () => {
    expect(formatScore(0.12345)).toBe('0.123');
    expect(formatScore(undefined)).toBe('-');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 * 1024)).toBe('3.0 MiB');
    expect(formatTime({ seconds: 1_700_000_000n, nanos: 5_000_000 } as never)).toBe('2023-11-14T22:13:20Z');
    expect(formatTime(undefined)).toBe('-');
  });
});

describe('mimeTypeOf', () => {
  it('maps the ingestible extensions, case-insensitively, and nothing else', () => {
    expect(mimeTypeOf('notes/README.MD')).toBe('text/markdown');
    expect(mimeTypeOf('a.txt')).toBe('text/plain');
    expect(mimeTypeOf('page.html')).toBe('text/html');
    expect(mimeTypeOf('photo.png')).toBeUndefined();
    expect(mimeTypeOf('Makefile')).toBeUndefined();
  });
});

describe('resourceName', () => {
  it('adds the collection to a bare id and keeps a full name', () => {
    expect(resourceName('sessions', 'abc')).toBe('sessions/abc');
    expect(resourceName('sessions', ' sessions/abc ')).toBe('sessions/abc');
  });
});

describe('memoryContent', () => {
  it('shows a FACT by its slot and value, other memories by their text', () => {
    expect(
      memoryContent({
        namespace: 'user_preference',
        key: 'answer_style',
        value: { style: 'concise' },
        text: 'x',
      }),
    ).toBe('user_preference/answer_style = {"style":"concise"}');
    expect(memoryContent({ namespace: '', key: '', text: 'Went hiking' })).toBe('Went hiking');
  });
});

describe('option parsers', () => {
  it('accepts kinds in any case and rejects others', () => {
    expect(parseKind('Memory')).toBe('MEMORY');
    expect(() => parseKind('doc')).toThrow('expected memory, chunk or round');
  });

  it('accepts positive integers only', () => {
    expect(parsePositiveInt('--top-k', '5')).toBe(5);
    expect(() => parsePositiveInt('--top-k', '0')).toThrow('--top-k');
    expect(() => parsePositiveInt('--top-k', '1.5')).toThrow('--top-k');
  });
});

describe('parts', () => {
  it('splits content into parts that add up to it', () => {
    const content = new Uint8Array(10).map((_, i) => i);
    const split = [...parts(content, 4)];
    expect(split.map((p) => p.length)).toEqual([4, 4, 2]);
    expect(Buffer.concat(split)).toEqual(Buffer.from(content));
  });
});

describe('tables and fields', () => {
  it('renders every cell without colour codes', () => {
    const table = renderTable(['a', 'b'], [['1', 'two']]);
    expect(table).toContain('two');
    expect(table).not.toContain('\u001b[');
  });

  it('pads keys to one width', () => {
    expect(
      renderFields([
        ['a', '1'],
        ['long', '2'],
      ]),
    ).toBe('a:    1\nlong: 2');
  });
});

describe('colorEnabled', () => {
  it('colours a terminal unless NO_COLOR, never JSON, and FORCE_COLOR forces it', () => {
    expect(colorEnabled({}, { isTTY: true }, false)).toBe(true);
    expect(colorEnabled({}, { isTTY: false }, false)).toBe(false);
    expect(colorEnabled({ NO_COLOR: '1' }, { isTTY: true }, false)).toBe(false);
    expect(colorEnabled({}, { isTTY: true }, true)).toBe(false);
    expect(colorEnabled({ FORCE_COLOR: '1' }, { isTTY: false }, false)).toBe(true);
  });
});

describe('stringifyJson', () => {
  it('writes int64 values as strings', () => {
    expect(JSON.parse(stringifyJson({ n: 5n }))).toEqual({ n: '5' });
  });
});

describe('subjectOfToken', () => {
  it('reads the sub claim without verifying, and nothing from a malformed token', () => {
    const payload = Buffer.from(JSON.stringify({ sub: 'alice' })).toString('base64url');
    expect(subjectOfToken(`x.${payload}.y`)).toBe('alice');
    expect(subjectOfToken('garbage')).toBeUndefined();
  });
});
