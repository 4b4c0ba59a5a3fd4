import { describe, expect, it } from '@jest/globals';
import {
  MAX_UNARY_BYTES,
  displayNameOf,
  fileProblem,
  headingTrail,
  inferMimeType,
  serverDone,
  splitChunkText,
  stateTone,
  stepProgress,
  uploadStep,
  type UploadPhase,
} from './model.js';

const server = (
  state: 'INGESTING' | 'READY' | 'FAILED',
  chunkCount: number,
  indexedChunkCount: number,
): UploadPhase => ({
  kind: 'server',
  name: 'documents/01J',
  state,
  chunkCount,
  indexedChunkCount,
  deduplicated: false,
  bytes: 100,
});

describe('inferMimeType', () => {
  it('goes by the extension first, since browsers often report Markdown as empty or octet-stream', () => {
    expect(inferMimeType('notes.md', '')).toBe('text/markdown');
    expect(inferMimeType('NOTES.MARKDOWN', 'application/octet-stream')).toBe('text/markdown');
    expect(inferMimeType('a.txt', 'text/plain')).toBe('text/plain');
    expect(inferMimeType('page.htm', '')).toBe('text/html');
  });
  it('falls back to a supported browser type, parameters dropped, else undefined', () => {
    expect(inferMimeType('README', 'text/plain;charset=utf-8')).toBe('text/plain');
    expect(inferMimeType('photo.png', 'image/png')).toBeUndefined();
    expect(inferMimeType('noext', '')).toBeUndefined();
  });
});

describe('fileProblem', () => {
  it('refuses empty files and files over 4 MiB, accepts exactly 4 MiB', () => {
    expect(fileProblem(0)).toBe('empty');
    expect(fileProblem(1)).toBeUndefined();
    expect(fileProblem(MAX_UNARY_BYTES)).toBeUndefined();
    expect(fileProblem(MAX_UNARY_BYTES + 1)).toBe('tooLarge');
    expect(MAX_UNARY_BYTES).toBe(4_194_304);
  });
});

describe('uploadStep and stepProgress', () => {
  it('reading reports the FileReader share', () => {
    const phase: UploadPhase = { kind: 'reading', loaded: 512, total: 2048 };
    expect(uploadStep(phase)).toBe('reading');
    expect(stepProgress(phase)).toBe(0.25);
    expect(stepProgress({ kind: 'reading', loaded: 0, total: 0 })).toBeUndefined();
  });
  it('sending has no measurable progress (fetch reports none)', () => {
    expect(uploadStep({ kind: 'sending', bytes: 10 })).toBe('sending');
    expect(stepProgress({ kind: 'sending', bytes: 10 })).toBeUndefined();
  });
  it('a READY document is indexing until every chunk is indexed, then done', () => {
    expect(uploadStep(server('READY', 4, 1))).toBe('indexing');
    expect(stepProgress(server('READY', 4, 1))).toBe(0.25);
    expect(uploadStep(server('READY', 4, 4))).toBe('done');
    expect(stepProgress(server('READY', 0, 0))).toBe(1);
  });
  it('INGESTING is still the server writing, FAILED ends the upload', () => {
    expect(uploadStep(server('INGESTING', 2, 0))).toBe('sending');
    expect(stepProgress(server('INGESTING', 2, 0))).toBeUndefined();
    expect(uploadStep(server('FAILED', 0, 0))).toBe('done');
  });
  it('idle and failed calls have no step', () => {
    expect(uploadStep({ kind: 'idle' })).toBeUndefined();
    expect(uploadStep({ kind: 'failed', error: new Error('x') })).toBeUndefined();
  });
});

describe('serverDone', () => {
  it('stops polling on FAILED or READY with every chunk indexed', () => {
    expect(serverDone('FAILED', 0, 0)).toBe(true);
    expect(serverDone('READY', 3, 3)).toBe(true);
    expect(serverDone('READY', 3, 2)).toBe(false);
    expect(serverDone('INGESTING', 3, 3)).toBe(false);
    expect(serverDone('OTHER', 0, 0)).toBe(false);
  });
});

describe('formatting', () => {
  it('tones states, joins heading paths, strips directories from file names', () => {
    expect(stateTone('READY')).toBe('ok');
    expect(stateTone('FAILED')).toBe('warn');
    expect(stateTone('INGESTING')).toBe('info');
    expect(stateTone('—')).toBe('plain');
    expect(headingTrail(['Install', 'Linux'])).toBe('Install › Linux');
    expect(headingTrail([])).toBeUndefined();
    expect(displayNameOf('C:\\docs\\guide.md')).toBe('guide.md');
    expect(displayNameOf('a/b/c.txt')).toBe('c.txt');
    expect(displayNameOf('x'.repeat(300))).toHaveLength(256);
  });
});

describe('splitChunkText', () => {
  it('splits header, overlap and new text by code points, not UTF-16 units', () => {
    expect(splitChunkText('abcdef', 0, 2)).toEqual({ header: '', overlap: 'ab', rest: 'cdef' });
    expect(splitChunkText('|h|\nxyz', 4, 1)).toEqual({ header: '|h|\n', overlap: 'x', rest: 'yz' });
    expect(splitChunkText('😀😀ab', 0, 2)).toEqual({ header: '', overlap: '😀😀', rest: 'ab' });
    expect(splitChunkText('ab', 5, 5)).toEqual({ header: 'ab', overlap: '', rest: '' });
    expect(splitChunkText('ab', -1, -1)).toEqual({ header: '', overlap: '', rest: 'ab' });
  });
});
