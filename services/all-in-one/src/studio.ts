import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { STUDIO_PREFIX, studioHandler, type LocalSignIn } from '@engram/gateway';
import { loadOrCreateLocalSecret, mintToken, type PublicHttpRoute } from '@engram/runtime';
import { recentOwners, type Store } from '@engram/store';
import type { AllInOneConfig } from './config.js';

/** The tenant of the local sign-in: the CLI's and the demo's (`npm run token`'s default). */
const LOCAL_TENANT = 'local';
/** Tokens of the local sign-in live as long as the CLI's. */
const LOCAL_TOKEN_TTL = '12h';

/** The built Studio: `apps/studio/dist`, found through the workspace package. */
export function studioDistDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@engram/studio/package.json')), 'dist');
}

/**
 * The Studio at `/studio` (decision 0038). The loopback sign-in is offered only when the server
 * signs with its own local secret (no ENGRAM_JWT_SECRET, ENGRAM_JWT_SECRET_FILE or RS256 keys:
 * the embedded defaults of `npm start`) and ENGRAM_STUDIO_LOCAL_SIGNIN is not `off`.
 */
export function studioRoute(config: AllInOneConfig, store: Store): PublicHttpRoute {
  const local =
    config.ENGRAM_STUDIO_LOCAL_SIGNIN === 'loopback' &&
    config.ENGRAM_AUTH_MODE === 'hs256' &&
    config.ENGRAM_JWT_SECRET === undefined &&
    config.ENGRAM_JWT_SECRET_FILE === undefined;
  const localSignIn: LocalSignIn | undefined = local
    ? {
        tenantId: LOCAL_TENANT,
        recentUsers: () => recentOwners(store, LOCAL_TENANT, 50),
        mint: (user, roles) =>
          mintToken(
            { subject: user, tenantId: LOCAL_TENANT, orgIds: [], roles: [...roles] },
            { algorithm: 'HS256', secret: loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR) },
            {
              expiresIn: LOCAL_TOKEN_TTL,
              issuer: config.ENGRAM_JWT_ISSUER,
              audience: config.ENGRAM_JWT_AUDIENCE,
            },
          ),
      }
    : undefined;
  return {
    prefix: STUDIO_PREFIX,
    access: 'public',
    handle: studioHandler({ distDir: studioDistDir(), localSignIn }),
  };
}
