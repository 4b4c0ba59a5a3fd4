/**
 * The all-in-one's loopback sign-in (libs/gateway/src/studio): on the machine that runs
 * `npm start`, the Studio lists the tenant's recent users and mints a token from the local
 * secret. Anywhere else these endpoints answer 403 and the Studio asks for a pasted token.
 */
export interface LocalUsers {
  readonly tenantId: string;
  readonly users: readonly { readonly ownerId: string; readonly lastActiveAt: number }[];
}

/** The recent users, or undefined when local sign-in is not offered here. */
export async function fetchLocalUsers(signal?: AbortSignal): Promise<LocalUsers | undefined> {
  const response = await fetch('local/users', {
    headers: { accept: 'application/json' },
    ...(signal !== undefined ? { signal } : {}),
  });
  if (!response.ok) return undefined;
  return (await response.json()) as LocalUsers;
}

/** Mints a token for `user` (with the admin role, i.e. reviewer, when asked). */
export async function mintLocalToken(user: string, admin: boolean): Promise<string> {
  const response = await fetch('local/token', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ user, roles: admin ? ['admin'] : [] }),
  });
  const body = (await response.json().catch(() => ({}))) as {
    token?: string;
    error?: { message?: string; code?: string };
  };
  if (!response.ok || typeof body.token !== 'string') {
    throw new Error(
      `${body.error?.code ?? String(response.status)}: ${body.error?.message ?? response.statusText}`,
    );
  }
  return body.token;
}
