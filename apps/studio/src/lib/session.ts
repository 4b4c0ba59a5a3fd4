/**
 * The Studio's credential: a bearer token kept in memory and in this tab's session storage (so a
 * reload keeps the sign-in), never in local storage, a cookie or a URL. The claims are decoded for
 * display only; the services verify the token on every call.
 */
export interface Claims {
  readonly subject: string;
  readonly tenantId: string;
  readonly roles: readonly string[];
  readonly orgIds: readonly string[];
  /** Epoch milliseconds, when the token says. */
  readonly expiresAt?: number;
}

const KEY = 'engram.studio.token';
let current: string | undefined;
const listeners = new Set<() => void>();

/** The token in use, if signed in. */
export function currentToken(): string | undefined {
  if (current === undefined) {
    try {
      current = sessionStorage.getItem(KEY) ?? undefined;
    } catch {
      current = undefined;
    }
  }
  return current;
}

/** Signs in with `token` (undefined signs out). */
export function setToken(token: string | undefined): void {
  current = token?.trim() === '' ? undefined : token?.trim();
  try {
    if (current === undefined) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, current);
  } catch {
    // Storage may be unavailable (private mode): the token stays in memory only.
  }
  for (const listener of listeners) listener();
}

/** Calls `listener` whenever the token changes; returns the unsubscribe function. */
export function onTokenChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * The claims of a JWT, read without verifying it (display only), or undefined when `token` is
 * not a JWT with an object payload. Engram's tokens carry `sub`, `tenant`, `orgs` and `roles`.
 */
export function decodeClaims(token: string): Claims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  let payload: unknown;
  try {
    const base64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const padded = base64 + '='.repeat((4 - (base64.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    payload = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof payload !== 'object' || payload === null) return undefined;
  const p = payload as Record<string, unknown>;
  const strings = (v: unknown) =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  return {
    subject: typeof p['sub'] === 'string' ? p['sub'] : '',
    tenantId: typeof p['tenant'] === 'string' ? p['tenant'] : '',
    roles: strings(p['roles']),
    orgIds: strings(p['orgs']),
    ...(typeof p['exp'] === 'number' ? { expiresAt: p['exp'] * 1000 } : {}),
  };
}
