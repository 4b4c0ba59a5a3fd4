/**
 * Which template a MemCell is shown with: the session's language when it has one, else the
 * language most of the user's words are in (Chinese when CJK characters are at least as many as
 * Latin words, the offline extractors' rule).
 */
import type { ExtractionInput } from '../candidate.js';
import { detectLanguage } from '../extractors/text.js';

/** The languages the prompt templates are written in. */
export type PromptLanguage = 'en' | 'zh';

/**
 * The language of the conversation: `zh` for a session language code starting with `zh`, `en` for
 * any other code; without one, detected from the user messages (all messages when the user said
 * nothing), English when nothing can be told.
 */
export function conversationLanguage(
  input: Pick<ExtractionInput, 'languageCode' | 'messages'>,
): PromptLanguage {
  const code = input.languageCode.trim().toLowerCase();
  if (code !== '') return code === 'zh' || code.startsWith('zh-') ? 'zh' : 'en';
  const users = input.messages.filter((m) => m.role === 'USER');
  const said = (users.length > 0 ? users : input.messages).map((m) => m.content).join('\n');
  return detectLanguage(said);
}
