import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { startQdrant } from '../src/index.js';

describe('startQdrant', () => {
  const saved = process.env['ENGRAM_TEST_QDRANT_BIN'];
  afterEach(() => {
    if (saved === undefined) delete process.env['ENGRAM_TEST_QDRANT_BIN'];
    else process.env['ENGRAM_TEST_QDRANT_BIN'] = saved;
  });

  it('starts a ready Qdrant 1.16.3 on a free loopback port and removes it on stop', async () => {
    const qdrant = await startQdrant();
    try {
      const root = (await (await fetch(`${qdrant.url}/`)).json()) as { version: string; commit: string };
      expect(root.version).toBe('1.16.3');
      expect(root.commit).toBe('bd49f45a8a2d4e4774cac50fa29507c4e8375af2');
      expect(qdrant.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(existsSync(join(qdrant.dir, 'storage'))).toBe(true);
    } finally {
      await qdrant.stop();
    }
    expect(existsSync(qdrant.dir)).toBe(false);
    await expect(fetch(`${qdrant.url}/readyz`)).rejects.toThrow();
  });

  it('fails loudly, saying to run npm ci, when the binary is missing', async () => {
    process.env['ENGRAM_TEST_QDRANT_BIN'] = join(tmpdir(), 'no-such-qdrant-binary');
    await expect(startQdrant()).rejects.toThrow(/run `npm ci` on linux x64/);
  });

  it('fails loudly with the server output when the binary does not start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engram-fake-qdrant-'));
    const fake = join(dir, 'qdrant');
    writeFileSync(fake, '#!/bin/sh\necho "panic: storage is broken" >&2\nexit 3\n');
    chmodSync(fake, 0o755);
    process.env['ENGRAM_TEST_QDRANT_BIN'] = fake;
    try {
      await expect(startQdrant()).rejects.toThrow(
        /did not start: exited with code 3[\s\S]*storage is broken/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
