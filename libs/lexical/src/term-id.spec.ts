import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { termId } from './term-id.js';

/** FNV-1a 32 written the obvious way over TextEncoder's bytes, to check the streaming version. */
function referenceFnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

describe('termId', () => {
  it('matches the published FNV-1a 32 test vectors', () => {
    expect(termId('')).toBe(0x811c9dc5);
    expect(termId('a')).toBe(0xe40c292c);
    expect(termId('foobar')).toBe(0xbf9cf968);
  });

  it('keeps the ids pinned for tokens already stored in indexes', () => {
    expect(termId('answer')).toBe(2222987743);
    expect(termId('简洁')).toBe(2004414721);
    expect(termId('gpt4o')).toBe(2906568215);
    expect(termId('𠀀𠀁')).toBe(3073594354);
  });

  it('reproduces the known FNV-1a collisions, so the hash is exactly FNV-1a', () => {
    expect(termId('costarring')).toBe(termId('liquid'));
    expect(termId('declinate')).toBe(termId('macallums'));
  });

  it('hashes a lone surrogate as U+FFFD, like UTF-8 encoding does', () => {
    expect(termId('\ud800')).toBe(termId('\ufffd'));
    expect(termId('a\udc00b')).toBe(termId('a\ufffdb'));
  });

  it('equals FNV-1a over the UTF-8 bytes for any string, as an unsigned 32-bit integer', () => {
    const utf16 = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), utf16), (text) => {
        const id = termId(text);
        expect(id).toBe(referenceFnv1a(text));
        expect(Number.isInteger(id) && id >= 0 && id <= 0xffffffff).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
