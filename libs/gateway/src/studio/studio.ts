import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import sirv from 'sirv';
import { serveLocalSignIn, type LocalSignIn } from './local-signin.js';

/** Where the Studio is served (`/studio`, its files built into `distDir`). */
export const STUDIO_PREFIX = '/studio';

/** Options of {@link studioHandler}. */
export interface StudioOptions {
  /** The built app (`apps/studio/dist`). Missing: every page says how to build it (503). */
  readonly distDir: string;
  /** The loopback sign-in; undefined turns it off (the Studio then asks for a pasted token). */
  readonly localSignIn?: LocalSignIn | undefined;
}

// Scripts and connections only from this origin; inline style attributes for bar widths.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/**
 * The handler of the public `/studio` route: the single-page app's files (any other path under
 * `/studio/` answers its index.html, the app routes by the hash) and the loopback sign-in under
 * `/studio/local/`. It reads no credential: the app calls the RPCs with the user's token.
 */
export function studioHandler(
  options: StudioOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  // Looked for until found, so a build made after the server started is served on the next request.
  let files: ReturnType<typeof sirv> | undefined;
  const builtFiles = () =>
    (files ??= existsSync(join(options.distDir, 'index.html'))
      ? sirv(options.distDir, {
          single: true,
          dev: false,
          etag: true,
          gzip: false,
          brotli: false,
          setHeaders: (res, pathname) => {
            for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
            res.setHeader(
              'cache-control',
              pathname.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
            );
          },
        })
      : undefined);
  return async (req, res) => {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '';
    if (path === STUDIO_PREFIX) {
      res.writeHead(308, { location: `${STUDIO_PREFIX}/` });
      res.end();
      return;
    }
    const rest = path.slice(STUDIO_PREFIX.length + 1);
    if (rest.startsWith('local/')) {
      await serveLocalSignIn(rest.slice('local/'.length), req, res, options.localSignIn);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    const serve = builtFiles();
    if (serve === undefined) {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end('Engram Studio is not built: run `npm run build:studio` (npm start does it) and reload.\n');
      return;
    }
    req.url = url.slice(STUDIO_PREFIX.length);
    serve(req, res, () => {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('not found\n');
    });
  };
}
