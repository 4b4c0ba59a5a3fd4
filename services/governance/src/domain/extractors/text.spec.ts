import { describe, expect, it } from '@jest/globals';
import {
  detectLanguage,
  isHedged,
  isHypothetical,
  isPoliteRequest,
  isQuestion,
  isReportedSpeech,
  splitClauses,
  splitSentences,
  subjectOf,
  truncate,
} from './text.js';

describe('detectLanguage', () => {
  it('tells Chinese from English by the share of CJK characters', () => {
    expect(detectLanguage('我喜欢喝绿茶。')).toBe('zh');
    expect(detectLanguage('I prefer tea.')).toBe('en');
    // A Chinese sentence with an English product name stays Chinese.
    expect(detectLanguage('我在用 Python 写后端服务')).toBe('zh');
  });

  it('falls back to the session hint when there are no letters', () => {
    expect(detectLanguage('200!!', 'zh-CN')).toBe('zh');
    expect(detectLanguage('👍', '')).toBe('en');
  });
});

describe('splitSentences', () => {
  it('splits at Chinese and Latin punctuation with exact offsets', () => {
    const text = '以后请你回答时更简洁一点。我最近 30 天目标是刷 200 道题！Really? Yes.';
    const spans = splitSentences(text);
    expect(spans.map((s) => s.text)).toEqual([
      '以后请你回答时更简洁一点。',
      '我最近 30 天目标是刷 200 道题！',
      'Really?',
      'Yes.',
    ]);
    for (const s of spans) expect(text.slice(s.start, s.end)).toBe(s.text);
  });

  it('does not split inside numbers, abbreviations or initials', () => {
    expect(splitSentences('I saw Dr. Smith at 3.30 pm with J. Doe. Then I left.').map((s) => s.text)).toEqual(
      ['I saw Dr. Smith at 3.30 pm with J. Doe.', 'Then I left.'],
    );
  });

  it('keeps closing quotes with their sentence and splits at line breaks', () => {
    expect(splitSentences('他说：“我明天到。”然后走了\n第二行').map((s) => s.text)).toEqual([
      '他说：“我明天到。”',
      '然后走了',
      '第二行',
    ]);
  });
});

describe('splitClauses', () => {
  it('splits at commas and before "but I" style conjunctions', () => {
    const [sentence] = splitSentences("My friend Sarah loves sushi, but I can't stand raw fish.");
    expect(splitClauses(sentence!).map((c) => c.text)).toEqual([
      'My friend Sarah loves sushi',
      "but I can't stand raw fish",
    ]);
  });

  it('splits Chinese clauses at full-width commas', () => {
    const [sentence] = splitSentences('我叫王小明，今年二十八岁，在杭州做前端开发。');
    expect(splitClauses(sentence!).map((c) => c.text)).toEqual([
      '我叫王小明',
      '今年二十八岁',
      '在杭州做前端开发',
    ]);
  });
});

describe('cues', () => {
  it('recognises questions, with or without a question mark', () => {
    expect(isQuestion('Do you like jazz?', 'en')).toBe(true);
    expect(isQuestion('hey how are you doing', 'en')).toBe(true);
    expect(isQuestion('I like jazz.', 'en')).toBe(false);
    expect(isQuestion('你喜欢什么颜色', 'zh')).toBe(true);
    expect(isQuestion('北京今天多少度', 'zh')).toBe(true);
    expect(isQuestion('我喜欢绿色。', 'zh')).toBe(false);
  });

  it('tells polite requests from questions', () => {
    expect(isPoliteRequest('Could you keep your answers short from now on?', 'en')).toBe(true);
    expect(isPoliteRequest('Do you think I should go?', 'en')).toBe(false);
    expect(isPoliteRequest('回答能不能短一点？', 'zh')).toBe(true);
  });

  it('finds hedges, hypotheticals and reported speech', () => {
    expect(isHedged('I think I might like jazz', 'en')).toBe(true);
    expect(isHedged('I like jazz', 'en')).toBe(false);
    expect(isHedged('我好像不太喜欢', 'zh')).toBe(true);
    expect(isHypothetical("If I were rich I'd buy a boat", 'en')).toBe(true);
    expect(isHypothetical("I'd like a summary", 'en')).toBe(false);
    expect(isHypothetical('要是我中了彩票，我就辞职', 'zh')).toBe(true);
    // 主要是 ("mainly") is not 要是 ("if").
    expect(isHypothetical('主要是项目下周五就要上线了', 'zh')).toBe(false);
    expect(isReportedSpeech('My brother thinks I should quit my job', 'en')).toBe(true);
    expect(isReportedSpeech('Sarah said she hates long meetings', 'en')).toBe(true);
    expect(isReportedSpeech('我妈说我应该多运动', 'zh')).toBe(true);
    expect(isReportedSpeech('I said no', 'en')).toBe(false);
  });

  it('finds the subject of a clause', () => {
    expect(subjectOf('I am so tired', 'en')).toBe('self');
    expect(subjectOf('but now I live in Seattle', 'en')).toBe('self');
    expect(subjectOf('My exam is on Friday', 'en')).toBe('self');
    expect(subjectOf('My sister loves horror movies', 'en')).toBe('other');
    expect(subjectOf('My wife Anna and I are celebrating', 'en')).toBe('self');
    expect(subjectOf('Please reply in English', 'en')).toBe('addressee');
    expect(subjectOf('He likes pizza', 'en')).toBe('other');
    expect(subjectOf('我上周搬到了上海', 'zh')).toBe('self');
    expect(subjectOf('我妈下周来看我', 'zh')).toBe('other');
    expect(subjectOf('我朋友特别喜欢吃火锅', 'zh')).toBe('other');
    expect(subjectOf('明天要去医院', 'zh')).toBe('none');
    expect(subjectOf('有个同学摔倒了', 'zh')).toBe('other');
  });
});

describe('truncate', () => {
  it('cuts at code points and marks the cut', () => {
    expect(truncate('😀😀😀', 2)).toBe('😀…');
    expect(truncate('short', 10)).toBe('short');
  });
});
