/**
 * A light English stemmer: the inflectional steps of the Porter algorithm (1a plurals, 1b -ed/-ing,
 * 1c final -y, 5a final -e, 5b double -ll) and none of its derivational steps (-ation, -ness,
 * -ful, …), so "answers"/"answered"/"answering" → "answer" while "general" and "generous" stay
 * apart. Outputs are stems, not words ("concise" → "concis", "day" → "dai"); what matters is that
 * the inflected forms of a word meet. Two deliberate departures from Porter: a final "s" after "u"
 * or "i" is kept ("status", "analysis"), and a four-letter "-ies" word keeps its "ie" ("ties" →
 * "tie", matching "tie").
 *
 * Only lower-case ASCII words of 3 to 64 letters are stemmed; anything else is returned as is.
 */
export function stemEnglish(word: string): string {
  if (word.length < 3 || word.length > 64 || !/^[a-z]+$/.test(word)) return word;
  let w = step1a(word);
  w = step1b(w);
  w = step1c(w);
  w = step5a(w);
  return step5b(w);
}

/** Plurals. */
function step1a(w: string): string {
  if (w.endsWith('sses')) return w.slice(0, -2);
  if (w.endsWith('ies')) return w.length === 4 ? w.slice(0, -1) : w.slice(0, -2);
  if (w.endsWith('s') && !/[sui]s$/.test(w)) return w.slice(0, -1);
  return w;
}

/** Past tense and progressive, with Porter's clean-up of the remaining stem. */
function step1b(w: string): string {
  if (w.endsWith('eed')) return measure(w.slice(0, -3)) > 0 ? w.slice(0, -1) : w;
  let stem: string;
  if (w.endsWith('ed') && hasVowel(w.slice(0, -2))) stem = w.slice(0, -2);
  else if (w.endsWith('ing') && hasVowel(w.slice(0, -3))) stem = w.slice(0, -3);
  else return w;
  if (/(?:at|bl|iz)$/.test(stem)) return `${stem}e`; // conflated → conflate
  if (endsWithDoubleConsonant(stem) && !/[lsz]$/.test(stem)) return stem.slice(0, -1); // hopping → hop
  if (measure(stem) === 1 && endsCvc(stem)) return `${stem}e`; // hoping → hope
  return stem;
}

/** A final y after a stem with a vowel becomes i, so "day", "days" and "studied" meet "study". */
function step1c(w: string): string {
  return w.endsWith('y') && hasVowel(w.slice(0, -1)) ? `${w.slice(0, -1)}i` : w;
}

/** A final e goes when the stem is long enough ("concise" → "concis", "hope" stays). */
function step5a(w: string): string {
  if (!w.endsWith('e')) return w;
  const stem = w.slice(0, -1);
  const m = measure(stem);
  return m > 1 || (m === 1 && !endsCvc(stem)) ? stem : w;
}

/** "controll" (from "controlled") → "control". */
function step5b(w: string): string {
  return w.endsWith('ll') && measure(w) > 1 ? w.slice(0, -1) : w;
}

/** Porter's consonant: not a, e, i, o, u, and y only when it follows a vowel (or starts the word). */
function isConsonant(w: string, i: number): boolean {
  const c = w[i];
  if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return false;
  if (c === 'y') return i === 0 || !isConsonant(w, i - 1);
  return true;
}

function hasVowel(w: string): boolean {
  for (let i = 0; i < w.length; i++) if (!isConsonant(w, i)) return true;
  return false;
}

/** Porter's m: the number of vowel-consonant sequences in [C](VC){m}[V]. */
function measure(w: string): number {
  let m = 0;
  let previousIsVowel = false;
  for (let i = 0; i < w.length; i++) {
    const vowel = !isConsonant(w, i);
    if (!vowel && previousIsVowel) m++;
    previousIsVowel = vowel;
  }
  return m;
}

function endsWithDoubleConsonant(w: string): boolean {
  const n = w.length;
  return n >= 2 && w[n - 1] === w[n - 2] && isConsonant(w, n - 1);
}

/** consonant-vowel-consonant at the end, the last not w, x or y ("hop", not "box"). */
function endsCvc(w: string): boolean {
  const n = w.length;
  if (n < 3) return false;
  return isConsonant(w, n - 3) && !isConsonant(w, n - 2) && isConsonant(w, n - 1) && !/[wxy]$/.test(w);
}
