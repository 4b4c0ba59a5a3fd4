import { describe, expect, it } from '@jest/globals';
import { TOKENIZER_LIMITS, tokenize } from './tokenize.js';

function shared(a: string, b: string): string[] {
  const other = new Set(tokenize(b));
  return [...new Set(tokenize(a))].filter((token) => other.has(token));
}

describe('tokenize: Chinese, Japanese and Korean', () => {
  it('emits the overlapping bigrams of a Chinese run, so its two-character words are terms', () => {
    expect(tokenize('我喜欢简洁的回答')).toEqual(['我喜', '喜欢', '欢简', '简洁', '洁的', '的回', '回答']);
  });

  it('lets a query written without particles match the sentence it paraphrases', () => {
    expect(shared('简洁回答', '我喜欢简洁的回答').sort()).toEqual(['回答', '简洁']);
  });

  it('adds segmenter words of three or more characters to the bigrams', () => {
    const tokens = tokenize('トヨタ自動車株式会社');
    expect(tokens).toEqual(expect.arrayContaining(['トヨタ', '自動車', '株式会社', '自動', '会社']));
  });

  it('keeps a one-character run as a unigram unless it is a function word', () => {
    expect(tokenize('用GPT-4o写Python代码')).toEqual(['用', 'gpt', '4o', 'gpt4o', '写', 'python', '代码']);
    expect(tokenize('AI和ML')).toEqual(['ai', 'ml']);
  });

  it('handles Japanese kana and kanji and Korean Hangul runs', () => {
    expect(tokenize('東京に行きました')).toEqual(expect.arrayContaining(['東京', '行き']));
    expect(tokenize('사과를 먹었어요')).toEqual(
      expect.arrayContaining(['사과를', '사과', '먹었어요', '먹었']),
    );
    expect(tokenize('ｶﾀｶﾅ')).toEqual(tokenize('カタカナ'));
  });

  it('builds bigrams over code points, not UTF-16 units', () => {
    expect(tokenize('𠀀𠀁中')).toEqual(['𠀀𠀁', '𠀁中']);
  });
});

describe('tokenize: words', () => {
  it('drops a word whose stem is a stopword ("alle" stems to "all")', () => {
    expect(tokenize('alle')).toEqual([]);
  });

  it('drops English stopwords and stems plurals, so the answer and its paraphrase share every term', () => {
    expect(tokenize('The answers were concise')).toEqual(['answer', 'concis']);
    expect(tokenize('concise answer')).toEqual(['concis', 'answer']);
  });

  it('conflates inflections of one word but keeps different words apart', () => {
    const stems = ['answer', 'answers', 'answered', 'answering'].map((w) => tokenize(w));
    expect(new Set(stems.flat())).toEqual(new Set(['answer']));
    expect(tokenize('hoping')).toEqual(tokenize('hope'));
    expect(tokenize('hopping')).toEqual(tokenize('hop'));
    expect(tokenize('hoping')).not.toEqual(tokenize('hopping'));
  });

  it('reduces contractions and possessives, with straight or curly apostrophes', () => {
    expect(tokenize("I don't know, she can't and they won't")).toEqual(['know']);
    expect(tokenize("the user's choice")).toEqual(tokenize('user choice'));
    expect(tokenize('the user’s choice')).toEqual(tokenize('user choice'));
    expect(tokenize("O'Brien")).toEqual(['obrien']);
  });

  it('lower-cases Cyrillic and Greek words without stemming them', () => {
    expect(tokenize('Привет МИР, ΟΔΟΣ')).toEqual(['привет', 'мир', 'οδος']);
  });

  it('normalizes full-width and compatibility characters with NFKC', () => {
    expect(tokenize('ＡＢＣ１２３')).toEqual(['abc123']);
    expect(tokenize('ﬁle ①')).toEqual(['file', '1']);
  });

  it('ignores soft hyphens and zero-width joiners inside a word', () => {
    expect(tokenize('co\u00ADoperation')).toEqual(tokenize('cooperation'));
    expect(tokenize('pass\u200Dword')).toEqual(tokenize('password'));
  });
});

describe('tokenize: digits and mixed tokens', () => {
  it('keeps integers, decimals and dotted numbers whole and drops thousands separators', () => {
    expect(tokenize('2024')).toEqual(['2024']);
    expect(tokenize('pi is 3.14.')).toEqual(['pi', '3.14']);
    expect(tokenize('1,000 people paid $1,299.99')).toEqual(['1000', 'peopl', 'paid', '1299.99']);
    expect(tokenize('192.168.0.1 v1.2.3')).toEqual(['192.168.0.1', 'v1.2.3']);
  });

  it('splits commas that are not thousands separators', () => {
    expect(tokenize('1,2,3 and 12,34')).toEqual(['1', '2', '3', '12', '34']);
  });

  it('emits the parts of a hyphenated compound and the parts joined, so its spellings meet', () => {
    expect(tokenize('GPT-4o')).toEqual(['gpt', '4o', 'gpt4o']);
    expect(tokenize('GPT-4o')).toEqual(expect.arrayContaining(tokenize('gpt4o')));
    expect(tokenize('GPT-4o')).toEqual(expect.arrayContaining(tokenize('GPT 4o')));
    expect(tokenize('e-mail user_id')).toEqual(['e', 'mail', 'email', 'user', 'id', 'userid']);
  });

  it('keeps letters and digits written together as one token', () => {
    expect(tokenize('mp3 4o h2o')).toEqual(['mp3', '4o', 'h2o']);
  });
});

describe('tokenize: emails, URLs, emoji and punctuation', () => {
  it('splits an email address into its words', () => {
    expect(tokenize('alice.smith@example.com')).toEqual(['alic', 'smith', 'exampl', 'com']);
  });

  it('splits a URL into its words', () => {
    expect(tokenize('https://docs.example.com/guide/getting-started?lang=zh#top')).toEqual([
      'http',
      'doc',
      'exampl',
      'com',
      'guid',
      'get',
      'start',
      'gettingstart',
      'lang',
      'zh',
      'top',
    ]);
  });

  it('drops emoji, symbols and punctuation', () => {
    expect(tokenize('🍎👍🏽 !!! ... — ©® 👨‍👩‍👧')).toEqual([]);
    expect(tokenize('我❤️你')).toEqual(['我', '你']);
  });
});

describe('tokenize: limits', () => {
  it('cuts a very long token to the maximum token length', () => {
    expect(tokenize('x'.repeat(1000))).toEqual(['x'.repeat(TOKENIZER_LIMITS.maxTokenLength)]);
  });

  it('never splits a surrogate pair when cutting a long token', () => {
    // Gothic letters are outside the BMP: 'a' plus 31 of them is 63 code units, the 32nd would not fit.
    expect(tokenize(`a${'𐌰'.repeat(100)}`)).toEqual([`a${'𐌰'.repeat(31)}`]);
  });

  it('returns at most the maximum number of tokens, the first ones of the text', () => {
    const tokens = tokenize(Array.from({ length: 100_000 }, (_, i) => `w${i}`).join(' '));
    expect(tokens).toHaveLength(TOKENIZER_LIMITS.maxTokens);
    expect(tokens.slice(0, 2)).toEqual(['w0', 'w1']);
    expect(tokenize('中文'.repeat(100_000))).toHaveLength(TOKENIZER_LIMITS.maxTokens);
  });

  it('reads only the first maxInputLength code units of a text', () => {
    const filler = ' '.repeat(TOKENIZER_LIMITS.maxInputLength);
    expect(tokenize(`${filler}hidden`)).toEqual([]);
    expect(tokenize(`visible${filler}`)).toEqual(['visibl']);
  });

  it('returns nothing for empty or blank text', () => {
    expect(tokenize('')).toEqual([]);
    expect(tokenize(' \n\t\u3000')).toEqual([]);
  });
});
