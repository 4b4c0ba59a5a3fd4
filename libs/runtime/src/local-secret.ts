import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** File name of the generated HS256 secret inside the data directory. */
export const LOCAL_SECRET_FILE = 'jwt-secret';

/**
 * The local signing secret of a one-machine installation: read from `<dataDir>/jwt-secret`, or
 * created there on first use (32 random bytes, base64url, file mode 0600, directory 0700). Local
 * tools mint tokens from it; real token verification stays on, so there is no insecure default.
 */
export function loadOrCreateLocalSecret(dataDir: string): Uint8Array {
  const file = join(dataDir, LOCAL_SECRET_FILE);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Tighten permissions left loose by hand (e.g. a copied data directory).
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return new TextEncoder().encode(readFileSync(file, 'utf8').trim());
}

/**
 * The local signing secret if `npm start` has created one in `dataDir`, else undefined (local
 * tools never create it: a secret no server uses would mint tokens nobody accepts).
 */
export function readLocalSecret(dataDir: string): Uint8Array | undefined {
  const file = join(dataDir, LOCAL_SECRET_FILE);
  if (!existsSync(file)) return undefined;
  return new TextEncoder().encode(readFileSync(file, 'utf8').trim());
}
