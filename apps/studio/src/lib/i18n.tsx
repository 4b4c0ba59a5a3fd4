import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { initialLang, type Lang, type Messages } from './lang.js';

const KEY = 'engram.studio.lang';

export { defineMessages, LANGS, type Lang } from './lang.js';

interface LangState {
  readonly lang: Lang;
  readonly setLang: (lang: Lang) => void;
}
const LangContext = createContext<LangState>({ lang: 'en', setLang: () => undefined });

export function LanguageProvider({ children }: { readonly children: ReactNode }) {
  const [lang, setLang] = useState<Lang>(() => {
    let saved: string | null;
    try {
      saved = localStorage.getItem(KEY);
    } catch {
      saved = null;
    }
    return initialLang(saved, navigator.languages);
  });
  useEffect(() => {
    document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
    try {
      localStorage.setItem(KEY, lang);
    } catch {
      // Not saved: the choice lasts for this page.
    }
  }, [lang]);
  const value = useMemo(() => ({ lang, setLang }), [lang]);
  return <LangContext.Provider value={value}>{children}</LangContext.Provider>;
}

export function useLang(): LangState {
  return useContext(LangContext);
}

/** The current language's messages of `messages` (from {@link defineMessages}). */
export function useMessages<M extends Messages>(messages: { readonly en: M; readonly zh: M }): M {
  return messages[useLang().lang];
}
