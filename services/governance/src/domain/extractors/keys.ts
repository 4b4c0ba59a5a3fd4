/**
 * The FACT namespaces and keys the offline extractors write, in one place. The hard rules
 * supersede by `namespace/key`, so a key must identify a slot (the same fact said twice gets the
 * same key) and never the fact's polarity or wording: "I like tea" and "I don't like tea" share
 * `user_preference/item.tea`, and the second supersedes the first.
 *
 * Keys follow the contract's `[a-z0-9_.-]{1,128}` (proto/engram/governance/v1/memory.proto). Latin
 * text becomes a lower-case slug of its words; a phrase in Chinese (or any non-Latin script) becomes
 * `zh-` followed by its code points in hex, which is stable and reversible without a transliteration
 * table. A small lexicon maps common items of both languages to one English slug, so "tea" and "茶"
 * are the same slot.
 *
 * | namespace         | key                          | value                                          |
 * | ----------------- | ---------------------------- | ---------------------------------------------- |
 * | `user_preference` | `answer_style`               | `{ style }`: concise, detailed, formal, casual, plain |
 * | `user_preference` | `answer_language`            | `{ language }`: a BCP-47 code (`zh`, `en`, …)  |
 * | `user_preference` | `item.<slug>`                | `{ item, sentiment: like | dislike | avoid, over? }` |
 * | `profile`         | `name`, `preferred_name`     | `{ name }`                                     |
 * | `profile`         | `age`                        | `{ age }` (a number)                           |
 * | `profile`         | `occupation`                 | `{ occupation }`                               |
 * | `profile`         | `employer`                   | `{ employer }`                                 |
 * | `profile`         | `location`                   | `{ place }` where the user lives now           |
 * | `profile`         | `hometown`                   | `{ place }` where the user is from             |
 * | `profile`         | `diet`                       | `{ diet }`: vegetarian, vegan, halal, kosher   |
 * | `profile`         | `allergy.<slug>`             | `{ allergen }`                                 |
 * | `profile`         | `language.<slug>`            | `{ language, level: native | speaks | learning }` |
 * | `relationship`    | `<relation>` or `<relation>.<name slug>` | `{ relation, name? }`              |
 * | `goal`            | `current_goal`               | `{ goal, durationDays?, period? }`             |
 *
 * Relations a person has one of at a time (spouse, partner, parents) use the bare relation as key;
 * the others (children, siblings, friends, pets) add the name's slug when a name is given, so two
 * daughters are two facts. The goal namespace is `goal` rather than the seed's `oj_goal`: the
 * extractor cannot tell an online-judge goal from any other, and one stable slot lets a new goal
 * supersede the last one (docs/decisions/0013-offline-extractors.md).
 */

/** The FACT namespaces written by the offline extractors. */
export const NAMESPACE = {
  preference: 'user_preference',
  profile: 'profile',
  relationship: 'relationship',
  goal: 'goal',
} as const;

/** The key of the current time-bound goal (`goal/current_goal`). */
export const GOAL_KEY = 'current_goal';

/** Relations a person has one of at a time: their key carries no name. */
const SINGLE_VALUED_RELATIONS: ReadonlySet<string> = new Set([
  'wife',
  'husband',
  'spouse',
  'partner',
  'boyfriend',
  'girlfriend',
  'mother',
  'father',
]);

/** Common items in both languages, mapped to one slug so the slot is shared across languages. */
const ITEM_LEXICON: readonly (readonly [slug: string, variants: readonly string[]])[] = [
  ['tea', ['tea', '茶', '喝茶']],
  ['green_tea', ['green tea', '绿茶']],
  ['milk_tea', ['milk tea', 'bubble tea', 'boba', '奶茶']],
  ['coffee', ['coffee', '咖啡', '喝咖啡']],
  ['alcohol', ['alcohol', 'drinking', 'booze', '酒', '喝酒']],
  ['beer', ['beer', '啤酒']],
  ['wine', ['wine', '红酒', '葡萄酒']],
  ['spicy_food', ['spicy food', 'spicy', 'spicy dishes', '辣', '吃辣', '辣的', '辣的东西', '辣椒']],
  ['cilantro', ['cilantro', 'coriander', '香菜']],
  ['meat', ['meat', '肉', '吃肉']],
  ['pork', ['pork', '猪肉']],
  ['beef', ['beef', '牛肉']],
  ['seafood', ['seafood', '海鲜']],
  ['raw_fish', ['raw fish', 'sashimi', '生鱼片']],
  ['sweets', ['sweets', 'desserts', 'dessert', 'sweet food', '甜食', '甜品']],
  ['durian', ['durian', '榴莲']],
  ['hot_pot', ['hot pot', 'hotpot', '火锅']],
  ['sushi', ['sushi', '寿司']],
  ['horror_movies', ['horror movies', 'horror films', 'horror movie', 'horror', '恐怖片', '恐怖电影']],
  ['jazz', ['jazz', '爵士乐', '爵士']],
  ['classical_music', ['classical music', '古典音乐']],
  ['running', ['running', 'jogging', '跑步']],
  ['swimming', ['swimming', '游泳']],
  ['hiking', ['hiking', '爬山', '徒步']],
  ['reading', ['reading', '看书', '读书', '阅读']],
  ['cooking', ['cooking', '做饭', '烹饪']],
  ['cats', ['cats', '猫', '猫咪']],
  ['dogs', ['dogs', '狗', '狗狗']],
];

const ITEM_SLUGS: ReadonlyMap<string, string> = new Map(
  ITEM_LEXICON.flatMap(([slug, variants]) => variants.map((variant) => [normalizeItem(variant), slug])),
);

/** Lower case, NFKC, collapsed spaces, no surrounding punctuation or articles. */
function normalizeItem(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\p{P}\p{S}]+/gu, ' ')
    .replace(/^\s*(?:the|a|an|some|any)\s+/u, '')
    .replace(/\s+/gu, ' ')
    .trim();
}

/** Plurals of words ending in "ie" ("movies", not "movys"). */
const IE_PLURALS: ReadonlySet<string> = new Set([
  'movies',
  'cookies',
  'pies',
  'ties',
  'lies',
  'brownies',
  'zombies',
  'selfies',
  'smoothies',
  'hoodies',
  'goodies',
  'rookies',
  'veggies',
  'indies',
]);

/** English light singular: "movies" → "movie", "dishes" → "dish", not "glass" or "bus". */
function singular(word: string): string {
  if (word.length <= 3 || word.endsWith('ss') || word.endsWith('us') || word.endsWith('is')) return word;
  if (IE_PLURALS.has(word)) return word.slice(0, -1);
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (/(?:ch|sh|x)es$/u.test(word)) return word.slice(0, -2);
  if (word.endsWith('s')) return word.slice(0, -1);
  return word;
}

const MAX_SLUG_CHARS = 60;

/**
 * A key segment for free text: Latin words → `horror_movie`; other scripts → `zh-6050-6016`.
 * Deterministic, so the same words always give the same segment.
 */
export function slug(text: string): string {
  const normalized = normalizeItem(text);
  if (/^[\p{Script=Latin}\d ]+$/u.test(normalized) && normalized !== '') {
    return normalized.split(' ').map(singular).join('_').slice(0, MAX_SLUG_CHARS).replace(/_+$/u, '');
  }
  const codePoints = Array.from(normalized.replace(/\s+/gu, ''))
    .slice(0, 12)
    .map((ch) => (ch.codePointAt(0) ?? 0).toString(16));
  return `zh-${codePoints.join('-')}`;
}

/** The canonical slug of an item: the lexicon's when known, else `slug(item)`. */
export function itemSlug(item: string): string {
  const normalized = normalizeItem(item);
  return ITEM_SLUGS.get(normalized) ?? ITEM_SLUGS.get(normalized.replace(/\s+/gu, '')) ?? slug(item);
}

/** `item.<slug>` in `user_preference`: one slot per liked, disliked or avoided thing. */
export function itemKey(item: string): string {
  return `item.${itemSlug(item)}`;
}

/** `allergy.<slug>` in `profile`. */
export function allergyKey(allergen: string): string {
  return `allergy.${itemSlug(allergen)}`;
}

/** `language.<code>` in `profile`. */
export function languageKey(languageCode: string): string {
  return `language.${slug(languageCode)}`;
}

/** `relationship/<relation>` or `<relation>.<name slug>` (see the table above). */
export function relationKey(relation: string, name?: string): string {
  if (SINGLE_VALUED_RELATIONS.has(relation) || name === undefined || name === '') return relation;
  return `${relation}.${slug(name)}`;
}
