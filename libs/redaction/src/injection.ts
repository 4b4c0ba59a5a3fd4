/**
 * The prompt-injection detector: text that tries to instruct a model. Governance's hard rule
 * `prompt_injection` runs it on memory candidates; context runs it on every retrieved item it puts
 * into a context (decision 0025), so both report the same pattern ids.
 *
 * Text is compared after normalisation: NFKC (full-width letters and punctuation become ASCII,
 * `：` becomes `:`), lower case, zero-width and bidi control characters removed, runs of whitespace
 * (line breaks too) collapsed to one space. The patterns, each with a stable id that callers
 * report (never the text):
 *
 * | id | matches |
 * |---|---|
 * | `ignore_instructions` | ignore / disregard / forget / override / bypass … (previous, prior, above, earlier, preceding, foregoing, former, all, your, system, original, initial, developer) … instructions, prompts, rules, directions, directives, guidelines |
 * | `role_reassignment` | "you are now a/an/the/in/no longer/free/unrestricted/jailbroken/dan …", "you're now a …", "from now on you are a/an …", "act as an unrestricted/jailbroken …" |
 * | `system_prompt` | "system prompt:", "system:" or "developer:" followed by an order ("you …", "ignore …", "from now …", "always …", "never …"), "new instructions:", "reveal/print/show/repeat/output your system prompt/instructions" |
 * | `chat_template` | chat-template control tokens: `<\|im_start\|>`, `<\|system\|>`, `<\|endoftext\|>`, `[INST]`, `<<SYS>>` |
 * | `jailbreak` | "enable/enter/activate developer/god/dan/jailbreak mode", "do anything now" |
 * | `ignore_instructions_zh` | 忽略 / 无视 / 忘记 / 忘掉 / 不要理会 / 不要遵守 / 跳过 … (之前 / 以前 / 先前 / 此前 / 上面 / 上述 / 前面 / 以上 / 所有 / 全部 / 一切 / 你的) … 指令 / 指示 / 提示 / 提示词 / 规则 / 设定 / 命令 |
 * | `role_reassignment_zh` | 你现在是一个 / 一名 / 一位…, 你现在扮演 / 充当…, 从现在开始 / 从现在起 你是 / 就是 / 扮演… |
 * | `system_prompt_zh` | 系统提示: / 系统提示词:, 新指令: / 新的指令:, 输出 / 显示 / 告诉我 / 泄露 / 重复 (你的) 系统提示 / 系统指令 / 初始指令 |
 *
 * Ordinary preferences ("from now on please answer more concisely", "以后回答简洁一点") do not match.
 */

/** One documented pattern: a stable id (reported instead of the text) and its expression. */
export interface InjectionPattern {
  readonly id: string;
  readonly pattern: RegExp;
}

const QUALIFIER =
  '(?:previous|prior|above|earlier|preceding|foregoing|former|all|your|system|original|initial|developer)';
const DIRECTIVE = '(?:instructions?|prompts?|rules|directions|directives|guidelines|commands)';

/** The documented patterns, matched against normalised text. */
export const INJECTION_PATTERNS: readonly InjectionPattern[] = [
  {
    id: 'ignore_instructions',
    pattern: new RegExp(
      `\\b(?:ignore|disregard|forget|override|bypass)\\b(?: [a-z]+){0,3}? ${QUALIFIER}(?: [a-z]+){0,2}? ${DIRECTIVE}\\b`,
    ),
  },
  {
    id: 'role_reassignment',
    pattern:
      /\b(?:you are|you're) now (?:a|an|the|in|my|no longer|free|unrestricted|jailbroken|dan)\b|\bfrom now on,? you are (?:a|an|the|my|no longer|dan)\b|\bact as (?:a|an) (?:unrestricted|unfiltered|jailbroken|uncensored)\b/,
  },
  {
    id: 'system_prompt',
    pattern:
      /\bsystem prompt ?:|\b(?:system|developer) ?: ?(?:you|ignore|disregard|from now|new|always|never|do not|don't)\b|\bnew (?:system )?instructions? ?:|\b(?:reveal|print|show|repeat|output|leak) (?:me )?(?:your|the) (?:system|hidden|initial|original) (?:prompt|instructions)\b/,
  },
  {
    id: 'chat_template',
    pattern: /<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[\/?inst\]|<<\/?sys>>/,
  },
  {
    id: 'jailbreak',
    pattern:
      /\b(?:enable|enter|activate|switch to) (?:developer|god|dan|jailbreak|unrestricted) mode\b|\bdo anything now\b/,
  },
  {
    id: 'ignore_instructions_zh',
    pattern:
      /(?:忽略|无视|忘记|忘掉|不要理会|不要遵守|跳过)[^。！？!?\n]{0,8}?(?:之前|以前|先前|此前|上面|上述|前面|以上|所有|全部|一切|你的)[^。！？!?\n]{0,6}?(?:指令|指示|提示词?|规则|设定|命令)/,
  },
  {
    id: 'role_reassignment_zh',
    pattern: /你现在(?:是(?:一个|一名|一位|个)|扮演|充当)|从现在(?:开始|起)[,，]? ?你(?:是|就是|将扮演|扮演)/,
  },
  {
    id: 'system_prompt_zh',
    pattern:
      /系统提示词? ?:|新的?指令 ?:|(?:输出|显示|告诉我|泄露|重复)(?:你的)?(?:系统提示|系统指令|初始指令)/,
  },
];

// Zero-width characters, the word joiner, the BOM and bidirectional controls: invisible, and
// used to split trigger words.
const INVISIBLE = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u00AD]/g;

/** Text as the patterns see it: NFKC, lower case, invisible characters removed, spaces collapsed. */
export function normalizeForInjection(text: string): string {
  return text.normalize('NFKC').replace(INVISIBLE, '').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** The ids of the patterns `text` matches, in table order. */
export function injectionPatternsIn(text: string): string[] {
  const normalized = normalizeForInjection(text);
  return INJECTION_PATTERNS.filter((p) => p.pattern.test(normalized)).map((p) => p.id);
}
