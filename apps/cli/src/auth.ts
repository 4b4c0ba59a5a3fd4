import { join } from 'node:path';
import { LOCAL_SERVICE_SECRET_FILE, ROLES, mintToken, readLocalSecret, type Role } from '@engram/runtime';
import { CliError, EXIT, usageError } from './errors.js';

/** The environment the CLI reads (only here and in `connection.ts`). */
export interface CliEnv {
  /** ENGRAM_ADDR, default `http://127.0.0.1:50051` (the all-in-one's default port). */
  readonly addr: string;
  /** ENGRAM_TOKEN: a bearer token from the deployment's identity provider, used as is. */
  readonly token: string | undefined;
  /** ENGRAM_USER: the user to mint a local token for, default `local`. */
  readonly user: string;
  /** ENGRAM_DATA_DIR: where `npm start` keeps its data and `jwt-secret`, default `.engram`. */
  readonly dataDir: string;
  /** ENGRAM_JWT_SECRET / ENGRAM_JWT_ISSUER / ENGRAM_JWT_AUDIENCE, as `npm run token` reads them. */
  readonly jwtSecret: string | undefined;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
}

export const DEFAULT_ADDR = 'http://127.0.0.1:50051';
/** The tenant of local tokens, as `npm run token` mints them. */
export const LOCAL_TENANT = 'local';
export const DEFAULT_TTL = '12h';

const set = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === '' ? undefined : value.trim();

export function cliEnv(env: Readonly<Record<string, string | undefined>>): CliEnv {
  const addr = set(env['ENGRAM_ADDR']) ?? DEFAULT_ADDR;
  return {
    // A bare host:port is taken as plaintext HTTP/2, like the server's own default.
    addr: /^https?:\/\//.test(addr) ? addr.replace(/\/+$/, '') : `http://${addr}`,
    token: set(env['ENGRAM_TOKEN']),
    user: set(env['ENGRAM_USER']) ?? 'local',
    dataDir: set(env['ENGRAM_DATA_DIR']) ?? '.engram',
    jwtSecret: set(env['ENGRAM_JWT_SECRET']),
    issuer: set(env['ENGRAM_JWT_ISSUER']),
    audience: set(env['ENGRAM_JWT_AUDIENCE']),
  };
}

/** Claims of a token the CLI mints (compatible with `npm run token`). */
export interface MintRequest {
  readonly subject: string;
  readonly tenantId?: string;
  readonly orgIds?: readonly string[];
  readonly roles?: readonly string[];
  readonly ttl?: string;
}

/** Mints a local HS256 token from ENGRAM_JWT_SECRET or `<ENGRAM_DATA_DIR>/jwt-secret`. */
export async function mintLocalToken(env: CliEnv, request: MintRequest): Promise<string> {
  const roles = (request.roles ?? []).map((role) => {
    if (!(ROLES as readonly string[]).includes(role)) {
      throw usageError(`unknown role "${role}"; expected one of ${ROLES.join(', ')}`);
    }
    return role as Role;
  });
  // The `service` role is granted by the service key only (decision 0024): the local one.
  const service = roles.includes('service');
  const secret = service
    ? readLocalSecret(env.dataDir, LOCAL_SERVICE_SECRET_FILE)
    : env.jwtSecret !== undefined
      ? new TextEncoder().encode(env.jwtSecret)
      : readLocalSecret(env.dataDir);
  if (secret === undefined) {
    throw new CliError(
      EXIT.TOKEN,
      `no token: set ENGRAM_TOKEN, or run where \`npm start\` created ${join(env.dataDir, service ? LOCAL_SERVICE_SECRET_FILE : 'jwt-secret')} (ENGRAM_DATA_DIR)`,
      { kind: 'no_credential', dataDir: env.dataDir },
    );
  }
  return mintToken(
    {
      subject: request.subject,
      tenantId: request.tenantId ?? LOCAL_TENANT,
      orgIds: [...(request.orgIds ?? [])],
      roles,
    },
    { algorithm: 'HS256', secret },
    {
      expiresIn: request.ttl ?? DEFAULT_TTL,
      ...(env.issuer === undefined ? {} : { issuer: env.issuer }),
      ...(env.audience === undefined ? {} : { audience: env.audience }),
    },
  );
}

/** The credential of a call and whom it names. */
export interface Credential {
  readonly token: string;
  /** The token's `sub` (read, not verified: the server verifies). */
  readonly subject: string;
  /** Where the token came from. */
  readonly source: 'ENGRAM_TOKEN' | 'minted';
}

/** The `sub` claim of a JWT, read without verification (for display and defaults only). */
export function subjectOfToken(token: string): string | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}

/** The identity options of the command line (`--user`, `--org`, `--role`). */
export interface IdentityFlags {
  readonly user?: string | undefined;
  readonly orgs?: readonly string[] | undefined;
  readonly roles?: readonly string[] | undefined;
}

/** Whether the command line asks for a locally minted identity. */
export function wantsLocalToken(flags: IdentityFlags): boolean {
  return flags.user !== undefined || (flags.orgs?.length ?? 0) > 0 || (flags.roles?.length ?? 0) > 0;
}

/**
 * The credential, in this order: `--user`/`--org`/`--role` on the command line mint a local token
 * (for `--user`, else ENGRAM_USER, else `local`); else ENGRAM_TOKEN as is; else a local token for
 * ENGRAM_USER (default `local`).
 */
export async function resolveCredential(env: CliEnv, flags: IdentityFlags): Promise<Credential> {
  if (!wantsLocalToken(flags) && env.token !== undefined) {
    return { token: env.token, subject: subjectOfToken(env.token) ?? '?', source: 'ENGRAM_TOKEN' };
  }
  const subject = flags.user ?? env.user;
  const token = await mintLocalToken(env, {
    subject,
    orgIds: flags.orgs ?? [],
    roles: flags.roles ?? [],
  });
  return { token, subject, source: 'minted' };
}
