import { useEffect, useState, type SyntheticEvent } from 'react';
import { formatAgo } from '../lib/format.js';
import { defineMessages, LANGS, useLang, useMessages } from '../lib/i18n.js';
import { fetchLocalUsers, mintLocalToken, type LocalUsers } from '../lib/local-signin.js';
import { decodeClaims, setToken } from '../lib/session.js';

const text = defineMessages({
  en: {
    title: 'Sign in to Engram Studio',
    localTitle: 'On this machine',
    localHint: 'Pick a user of the local tenant: a token is minted from this server’s local secret.',
    noUsers: 'No users yet: run npm run demo, or type a user id.',
    userId: 'User id',
    reviewer: 'Reviewer (admin role)',
    signInAs: 'Sign in',
    pasteTitle: 'With a bearer token',
    pasteHint: 'Paste a token issued for this deployment. It is kept in this tab only.',
    token: 'Bearer token',
    useToken: 'Use token',
    notJwt: 'This is not a JWT (three base64url parts).',
    remoteOnly: 'Local sign-in is offered only on the machine that runs the server.',
  },
  zh: {
    title: '登录 Engram Studio',
    localTitle: '在本机',
    localHint: '选择本地租户的用户：用此服务器的本地密钥签发令牌。',
    noUsers: '还没有用户：运行 npm run demo，或输入用户 ID。',
    userId: '用户 ID',
    reviewer: '审核员（admin 角色）',
    signInAs: '登录',
    pasteTitle: '使用 Bearer 令牌',
    pasteHint: '粘贴为此部署签发的令牌。它只保存在当前标签页。',
    token: 'Bearer 令牌',
    useToken: '使用令牌',
    notJwt: '这不是 JWT（三段 base64url）。',
    remoteOnly: '只有在运行服务器的机器上才提供本地登录。',
  },
});

export function SignIn() {
  const t = useMessages(text);
  const { lang, setLang } = useLang();
  const [local, setLocal] = useState<LocalUsers | undefined | 'checking'>('checking');
  const [user, setUser] = useState('');
  const [admin, setAdmin] = useState(false);
  const [pasted, setPasted] = useState('');
  const [failure, setFailure] = useState<string | undefined>();
  useEffect(() => {
    const abort = new AbortController();
    fetchLocalUsers(abort.signal).then(
      (users) => setLocal(users),
      () => setLocal(undefined),
    );
    return () => abort.abort();
  }, []);
  const signInLocally = async (id: string) => {
    setFailure(undefined);
    try {
      setToken(await mintLocalToken(id.trim(), admin));
    } catch (error) {
      setFailure(error instanceof Error ? error.message : String(error));
    }
  };
  const onLocal = (e: SyntheticEvent) => {
    e.preventDefault();
    if (user.trim() !== '') void signInLocally(user);
  };
  const onPaste = (e: SyntheticEvent) => {
    e.preventDefault();
    const token = pasted.trim().replace(/^Bearer\s+/i, '');
    if (decodeClaims(token) === undefined) setFailure(t.notJwt);
    else setToken(token);
  };
  return (
    <main className="signin">
      <header className="signin-head">
        <h1>{t.title}</h1>
        <select aria-label="Language" value={lang} onChange={(e) => setLang(e.target.value as typeof lang)}>
          {LANGS.map((l) => (
            <option key={l} value={l}>
              {l === 'en' ? 'English' : '中文'}
            </option>
          ))}
        </select>
      </header>
      {failure !== undefined ? (
        <div className="error" role="alert">
          {failure}
        </div>
      ) : null}
      {local !== 'checking' && local !== undefined ? (
        <section className="section" aria-labelledby="local-title">
          <h2 id="local-title">{t.localTitle}</h2>
          <p className="muted">{t.localHint}</p>
          {local.users.length === 0 ? <p className="muted">{t.noUsers}</p> : null}
          <ul className="user-list">
            {local.users.map((u) => (
              <li key={u.ownerId}>
                <button type="button" data-user={u.ownerId} onClick={() => void signInLocally(u.ownerId)}>
                  {u.ownerId}
                </button>{' '}
                <span className="muted">{formatAgo(u.lastActiveAt, lang)}</span>
              </li>
            ))}
          </ul>
          <form onSubmit={onLocal} className="row">
            <label>
              {t.userId}{' '}
              <input name="user" value={user} onChange={(e) => setUser(e.target.value)} maxLength={128} />
            </label>
            <label>
              <input
                type="checkbox"
                name="admin"
                checked={admin}
                onChange={(e) => setAdmin(e.target.checked)}
              />{' '}
              {t.reviewer}
            </label>
            <button type="submit">{t.signInAs}</button>
          </form>
        </section>
      ) : local === undefined ? (
        <p className="muted">{t.remoteOnly}</p>
      ) : null}
      <section className="section" aria-labelledby="paste-title">
        <h2 id="paste-title">{t.pasteTitle}</h2>
        <p className="muted">{t.pasteHint}</p>
        <form onSubmit={onPaste}>
          <label className="block">
            {t.token}
            <textarea name="token" rows={3} value={pasted} onChange={(e) => setPasted(e.target.value)} />
          </label>
          <button type="submit">{t.useToken}</button>
        </form>
      </section>
    </main>
  );
}
