import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';

/** What the loopback sign-in needs from the process that serves the Studio (the all-in-one). */
export interface LocalSignIn {
  /** The tenant whose users are listed and signed in (`local`, as for the CLI and the demo). */
  readonly tenantId: string;
  /** The tenant's users with their newest activity, newest first. */
  readonly recentUsers: () => Promise<readonly { ownerId: string; lastActiveAt: number }[]>;
  /** A token for `user` with `roles`, signed with the server's local secret. */
  readonly mint: (user: string, roles: readonly LocalRole[]) => Promise<string>;
}

/** The roles the local picker may grant: `admin` (reviewer). Never `platform` or `service`. */
export type LocalRole = 'admin';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const MAX_BODY_BYTES = 4096;
const MAX_USER_CHARS = 128;

/**
 * Whether a request may use the loopback sign-in: it came over a loopback connection, it names a
 * loopback host (so a DNS-rebinding page that resolves its own name to 127.0.0.1 is refused), and
 * a browser that says where it comes from says this very origin. A token is minted only for a
 * JSON body, which a cross-origin page cannot send without a CORS preflight this server never
 * grants.
 */
export function isLoopbackRequest(req: IncomingMessage): boolean {
  const remote = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  const loopbackPeer = remote === '::1' || (isIP(remote) === 4 && remote.startsWith('127.'));
  const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');
  if (!loopbackPeer || !LOOPBACK_HOSTS.has(host)) return false;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${(req.headers.host ?? '').toLowerCase()}`) return false;
  const site = req.headers['sec-fetch-site'];
  return site === undefined || site === 'same-origin' || site === 'none';
}

/**
 * Serves `GET local/users` and `POST local/token` under the Studio's prefix. Anything not
 * allowed by {@link isLoopbackRequest} gets 403 `LOCAL_SIGNIN_REFUSED`; the Studio then asks for
 * a pasted token.
 */
export async function serveLocalSignIn(
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
  signIn: LocalSignIn | undefined,
): Promise<void> {
  if (signIn === undefined) {
    answer(res, 404, failure('LOCAL_SIGNIN_OFF', 'local sign-in is off on this server: paste a token'));
    return;
  }
  if (!isLoopbackRequest(req)) {
    answer(
      res,
      403,
      failure('LOCAL_SIGNIN_REFUSED', 'local sign-in is offered on the loopback interface only'),
    );
    return;
  }
  if (path === 'users' && req.method === 'GET') {
    answer(res, 200, { tenantId: signIn.tenantId, users: await signIn.recentUsers() });
    return;
  }
  if (path === 'token' && req.method === 'POST') {
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      answer(res, 415, failure('FIELD_INVALID', 'the body must be application/json'));
      return;
    }
    const body = await readJson(req);
    const parsed = parseTokenRequest(body);
    if (typeof parsed === 'string') {
      answer(res, 400, failure('FIELD_INVALID', parsed));
      return;
    }
    answer(res, 200, { token: await signIn.mint(parsed.user, parsed.roles), tenantId: signIn.tenantId });
    return;
  }
  res.setHeader('allow', path === 'token' ? 'POST' : 'GET');
  answer(
    res,
    path === 'users' || path === 'token' ? 405 : 404,
    failure('RESOURCE_NOT_FOUND', 'no such endpoint'),
  );
}

/** Checks a token request: `{ user: string, roles?: ['admin'] }`; a string is the problem. */
export function parseTokenRequest(body: unknown): { user: string; roles: LocalRole[] } | string {
  if (typeof body !== 'object' || body === null) return 'expected a JSON object';
  const { user, roles = [] } = body as { user?: unknown; roles?: unknown };
  if (typeof user !== 'string' || user.trim() === '') return 'user: required';
  if (Array.from(user.trim()).length > MAX_USER_CHARS) return `user: at most ${MAX_USER_CHARS} characters`;
  if (Array.from(user).some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return 'user: control characters are not allowed';
  }
  if (!Array.isArray(roles) || !roles.every((r) => r === 'admin'))
    return 'roles: only "admin" may be asked for';
  return { user: user.trim(), roles: roles.length > 0 ? ['admin'] : [] };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function failure(code: string, message: string) {
  return { error: { message, type: 'invalid_request_error', param: null, code } };
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(text);
}
