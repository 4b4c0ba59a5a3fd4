import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type ComponentType } from 'react';
import { defineMessages, LANGS, useLang, useMessages } from './lib/i18n.js';
import { routeHash, useRoute, type ViewProps } from './lib/route.js';
import { currentToken, decodeClaims, onTokenChange, setToken } from './lib/session.js';
import { ContextView } from './views/Context.js';
import { DocumentsView } from './views/Documents.js';
import { ForgetView } from './views/Forget.js';
import { MemoriesView } from './views/Memories.js';
import { ReviewView } from './views/Review.js';
import { SearchView } from './views/Search.js';
import { SessionsView } from './views/Sessions.js';
import { SignIn } from './views/SignIn.js';
import { SystemView } from './views/System.js';

const text = defineMessages({
  en: {
    memories: 'Memories',
    review: 'Review queue',
    sessions: 'Sessions',
    search: 'Search',
    context: 'Context builder',
    documents: 'Documents',
    system: 'System',
    forget: 'Forget me',
    signOut: 'Sign out',
    tenant: 'tenant',
    unknownView: 'There is no such page.',
    language: 'Language',
    skip: 'Skip to content',
  },
  zh: {
    memories: '记忆',
    review: '审核队列',
    sessions: '会话',
    search: '搜索',
    context: '上下文构建',
    documents: '文档',
    system: '系统',
    forget: '遗忘我',
    signOut: '退出登录',
    tenant: '租户',
    unknownView: '没有这个页面。',
    language: '语言',
    skip: '跳到内容',
  },
});

const VIEWS: readonly { readonly key: keyof typeof text.en; readonly view: ComponentType<ViewProps> }[] = [
  { key: 'memories', view: MemoriesView },
  { key: 'review', view: ReviewView },
  { key: 'sessions', view: SessionsView },
  { key: 'search', view: SearchView },
  { key: 'context', view: ContextView },
  { key: 'documents', view: DocumentsView },
  { key: 'system', view: SystemView },
  { key: 'forget', view: ForgetView },
];

/**
 * The signed-in token. Nothing one user loaded is shown to the next: the query cache is emptied
 * when the token changes, before anything renders with the new one (emptying it in an effect
 * after the render would drop the queries the new views had just started, leaving them pending).
 */
function useToken(): string | undefined {
  const queryClient = useQueryClient();
  const [token, setState] = useState(currentToken);
  useEffect(
    () =>
      onTokenChange(() => {
        queryClient.clear();
        setState(currentToken());
      }),
    [queryClient],
  );
  return token;
}

export function App() {
  const t = useMessages(text);
  const { lang, setLang } = useLang();
  const token = useToken();
  const route = useRoute();
  if (token === undefined) return <SignIn />;
  const claims = decodeClaims(token);
  const current = VIEWS.find((v) => v.key === route.view);
  const View = current?.view;
  return (
    <div className="app">
      <a
        className="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        {t.skip}
      </a>
      <header className="topbar">
        <span className="brand">Engram Studio</span>
        <span className="who" data-testid="who">
          {claims?.subject ?? '?'}
          <span className="muted">
            {' '}
            · {t.tenant} {claims?.tenantId ?? '?'}
            {claims !== undefined && claims.roles.length > 0 ? ` · ${claims.roles.join(', ')}` : ''}
          </span>
        </span>
        <label className="lang">
          <span className="sr-only">{t.language}</span>
          <select value={lang} onChange={(e) => setLang(e.target.value as typeof lang)}>
            {LANGS.map((l) => (
              <option key={l} value={l}>
                {l === 'en' ? 'English' : '中文'}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setToken(undefined)}>
          {t.signOut}
        </button>
      </header>
      <nav className="nav" aria-label="Studio">
        <ul>
          {VIEWS.map((v) => (
            <li key={v.key}>
              <a
                href={routeHash(v.key)}
                aria-current={v.key === route.view ? 'page' : undefined}
                data-view={v.key}
              >
                {t[v.key]}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" className="main" tabIndex={-1}>
        {View !== undefined ? <View route={route} /> : <p>{t.unknownView}</p>}
      </main>
    </div>
  );
}
