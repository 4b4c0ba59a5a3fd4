import { describe, expect, it } from '@jest/globals';
import { stemEnglish } from './stem.js';

describe('stemEnglish', () => {
  it.each([
    ['answers', 'answered', 'answering', 'answer'],
    ['studies', 'studied', 'studying', 'study'],
    ['classes', 'classed', 'classing', 'class'],
    ['boxes', 'boxed', 'boxing', 'box'],
    ['hopes', 'hoped', 'hoping', 'hope'],
    ['controls', 'controlled', 'controlling', 'control'],
    ['agrees', 'agreed', 'agreeing', 'agree'],
    ['days', 'day', 'days', 'day'],
    ['ties', 'tie', 'ties', 'tie'],
  ])('gives %s, %s, %s and %s one stem', (...forms) => {
    expect(new Set(forms.map(stemEnglish)).size).toBe(1);
  });

  it('keeps words that only look inflected', () => {
    expect(['status', 'analysis', 'class', 'need', 'thing', 'bring', 'sing', 'red'].map(stemEnglish)).toEqual(
      ['status', 'analysis', 'class', 'need', 'thing', 'bring', 'sing', 'red'],
    );
  });

  it('leaves derivational suffixes alone, so related but different words stay apart', () => {
    expect(stemEnglish('general')).not.toBe(stemEnglish('generous'));
    expect(stemEnglish('organization')).not.toBe(stemEnglish('organ'));
    expect(stemEnglish('hopping')).not.toBe(stemEnglish('hoping'));
  });

  it('returns non-ASCII, mixed, short and over-long words unchanged', () => {
    for (const word of ['cafés', 'привычки', 'mp3s', 'gpt4o', 'is', 'x'.repeat(65) + 's']) {
      expect(stemEnglish(word)).toBe(word);
    }
  });
});
