/** The Studio's languages. Every text a view shows exists in both (checked by the compiler). */
export type Lang = 'en' | 'zh';
export const LANGS: readonly Lang[] = ['en', 'zh'];

/**
 * A view's messages in both languages: `zh` must have exactly the keys of `en`, so a missing
 * translation fails to compile. A message is a string or a function of its arguments.
 */
export type Messages = Record<string, string | ((...args: never[]) => string)>;
export function defineMessages<M extends Messages>(messages: {
  readonly en: M;
  readonly zh: { readonly [K in keyof M]: M[K] };
}): { readonly en: M; readonly zh: M } {
  return messages;
}

/** The language to start in: the saved choice, else the browser's, else English. */
export function initialLang(saved: string | null, browser: readonly string[]): Lang {
  if (saved === 'en' || saved === 'zh') return saved;
  return browser.some((l) => l.toLowerCase().startsWith('zh')) ? 'zh' : 'en';
}
