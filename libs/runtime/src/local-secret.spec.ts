import { chmodSync, chownSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { LOCAL_SECRET_FILE, loadOrCreateLocalSecret } from './local-secret.js';

const NOBODY = 65_534;
const uid = process.getuid?.() ?? 0;

describe('loadOrCreateLocalSecret', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-secret-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates a 0600 secret once and reads the same one again', () => {
    const first = loadOrCreateLocalSecret(dir);
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(statSync(join(dir, LOCAL_SECRET_FILE)).mode & 0o777).toBe(0o600);
    expect(loadOrCreateLocalSecret(dir)).toEqual(first);
  });

  it('tightens the permissions of its own secret file', () => {
    writeFileSync(join(dir, LOCAL_SECRET_FILE), 'my-own-secret\n', { mode: 0o644 });
    chmodSync(join(dir, LOCAL_SECRET_FILE), 0o644);
    expect(new TextDecoder().decode(loadOrCreateLocalSecret(dir))).toBe('my-own-secret');
    expect(statSync(join(dir, LOCAL_SECRET_FILE)).mode & 0o777).toBe(0o600);
  });

  // Changing a file's owner needs root; the check itself runs for every user.
  (uid === 0 ? it : it.skip)('refuses a pre-existing secret file owned by another user', () => {
    const file = join(dir, LOCAL_SECRET_FILE);
    writeFileSync(file, 'planted-by-someone-else\n', { mode: 0o600 });
    chownSync(file, NOBODY, NOBODY);
    expect(() => loadOrCreateLocalSecret(dir)).toThrow(/owned by uid 65534/);
  });

  it('refuses a secret file that is a symbolic link', () => {
    const elsewhere = join(dir, 'elsewhere');
    writeFileSync(elsewhere, 'known-secret\n', { mode: 0o600 });
    symlinkSync(elsewhere, join(dir, LOCAL_SECRET_FILE));
    expect(() => loadOrCreateLocalSecret(dir)).toThrow(/not a regular file/);
  });
});
