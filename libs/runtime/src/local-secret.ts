import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** File name of the generated HS256 secret inside the data directory. */
export const LOCAL_SECRET_FILE = 'jwt-secret';

/** File name of the generated HS256 service secret (`service`-role tokens, decision 0024). */
export const LOCAL_SERVICE_SECRET_FILE = 'service-jwt-secret';

/**
 * The local signing secret of a one-machine installation: read from `<dataDir>/jwt-secret` (or
 * `fileName`: the service secret is `service-jwt-secret`), or created there on first use (32 random bytes, base64url, file mode 0600, directory 0700). Local
 * tools mint tokens from it; real token verification stays on, so there is no insecure default.
 * A file that is not this user's own regular file is refused (it is opened without following a
 * symbolic link, and checked on the open descriptor): another user who planted or can rewrite it
 * knows the key that signs every token.
 */
export function loadOrCreateLocalSecret(dataDir: string, fileName = LOCAL_SECRET_FILE): Uint8Array {
  const file = join(dataDir, fileName);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw notOwnSecret(file, 'is not a regular file');
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw notOwnSecret(file, 'is not a regular file');
    const uid = process.getuid?.();
    if (uid !== undefined && info.uid !== uid)
      throw notOwnSecret(file, `is owned by uid ${info.uid}, not by this user (uid ${uid})`);
    // Tighten permissions left loose by hand (e.g. a copied data directory).
    if ((info.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    return new TextEncoder().encode(readFileSync(fd, 'utf8').trim());
  } finally {
    closeSync(fd);
  }
}

function notOwnSecret(file: string, what: string): Error {
  return new Error(
    `the local signing secret ${file} ${what}: refusing to sign tokens with a key another user may know; remove it (a new one is created) or make it this user's own 0600 file`,
  );
}

/**
 * The local signing secret if `npm start` has created one in `dataDir`, else undefined (local
 * tools never create it: a secret no server uses would mint tokens nobody accepts).
 */
export function readLocalSecret(dataDir: string, fileName = LOCAL_SECRET_FILE): Uint8Array | undefined {
  const file = join(dataDir, fileName);
  if (!existsSync(file)) return undefined;
  return new TextEncoder().encode(readFileSync(file, 'utf8').trim());
}
