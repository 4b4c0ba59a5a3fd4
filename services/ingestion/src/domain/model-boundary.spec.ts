import { describe, expect, it } from '@jest/globals';
import { boundaryAnswerSchema, shortenContent, transcript } from './model-boundary.js';

describe('shortenContent', () => {
  it('puts the content on one line', () => {
    expect(shortenContent('  line one\n\n  line two\tend ', 100)).toBe('line one line two end');
  });

  it('keeps two thirds from the start and the rest from the end around an ellipsis, in code points', () => {
    const shown = shortenContent('一二三四五六七八九十😀😀😀😀😀', 10);
    expect(Array.from(shown)).toHaveLength(10);
    expect(shown).toBe('一二三四五六…😀😀😀');
  });
});

describe('transcript', () => {
  it('writes one `[sequence] role: content` line per message', () => {
    expect(
      transcript(
        [
          { sequence: 3, role: 'SYSTEM', content: 'Be brief.' },
          { sequence: 4, role: 'USER', content: '你好\n世界' },
        ],
        50,
      ),
    ).toBe('[3] system: Be brief.\n[4] user: 你好 世界');
  });
});

describe('boundaryAnswerSchema', () => {
  const schema = boundaryAnswerSchema([2, 4]);

  it('accepts allowed boundaries and trims rationales', () => {
    expect(schema.parse({ boundaries: [{ after_sequence: 4, rationale: ' cars ' }] })).toEqual({
      boundaries: [{ after_sequence: 4, rationale: 'cars' }],
    });
  });

  it('rejects a sequence that is not an allowed split point, naming the allowed values', () => {
    const result = schema.safeParse({ boundaries: [{ after_sequence: 3, rationale: 'x' }] });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/allowed values: 2, 4/u);
  });

  it('rejects an empty or over-long rationale', () => {
    expect(schema.safeParse({ boundaries: [{ after_sequence: 2, rationale: '  ' }] }).success).toBe(false);
    expect(
      schema.safeParse({ boundaries: [{ after_sequence: 2, rationale: 'x'.repeat(201) }] }).success,
    ).toBe(false);
  });
});
