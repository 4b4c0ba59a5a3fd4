import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { expandPaths } from './ingest.js';

describe('expandPaths', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'engram-ingest-'));
    mkdirSync(join(base, 'notes', 'sub'), { recursive: true });
    mkdirSync(join(base, 'private'));
    writeFileSync(join(base, 'notes', 'a.md'), '# a');
    writeFileSync(join(base, 'notes', 'sub', 'b.txt'), 'b');
    writeFileSync(join(base, 'private', 'secret.txt'), 'do not upload');
  });
  afterEach(() => {
    rmSync(base, { recursive: true, force: true });
  });

  it('never follows a symbolic link out of the given directory', async () => {
    symlinkSync(join(base, 'private', 'secret.txt'), join(base, 'notes', 'leak.txt'));
    symlinkSync(join(base, 'private'), join(base, 'notes', 'leakdir'));
    const { files, outside } = await expandPaths([join(base, 'notes')]);
    expect(files).toEqual([join(base, 'notes', 'a.md'), join(base, 'notes', 'sub', 'b.txt')]);
    expect(outside).toEqual([join(base, 'notes', 'leak.txt'), join(base, 'notes', 'leakdir')]);
  });

  it('follows a link that stays inside the directory, once, and terminates on a cycle', async () => {
    symlinkSync(join(base, 'notes', 'a.md'), join(base, 'notes', 'a-link.md'));
    symlinkSync(join(base, 'notes'), join(base, 'notes', 'sub', 'loop'));
    const { files, outside } = await expandPaths([join(base, 'notes')]);
    expect(files).toEqual([
      join(base, 'notes', 'a-link.md'),
      join(base, 'notes', 'a.md'),
      join(base, 'notes', 'sub', 'b.txt'),
    ]);
    expect(outside).toEqual([]);
  });

  it('takes a path named on the command line as given, link or not', async () => {
    symlinkSync(join(base, 'private', 'secret.txt'), join(base, 'named.txt'));
    const { files, missing } = await expandPaths([join(base, 'named.txt'), join(base, 'absent.md')]);
    expect(files).toEqual([join(base, 'named.txt')]);
    expect(missing).toEqual([join(base, 'absent.md')]);
  });
});
