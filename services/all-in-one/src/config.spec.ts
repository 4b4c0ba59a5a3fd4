import { describe, expect, it } from '@jest/globals';
import { loadConfig } from './config.js';

describe('the all-in-one configuration', () => {
  it('embeds Search queries on the event loop unless told otherwise (one process within 1 GiB)', () => {
    expect(loadConfig({}).ENGRAM_SEARCH_EMBED_THREAD).toBe('off');
    expect(loadConfig({ ENGRAM_SEARCH_EMBED_THREAD: 'on' }).ENGRAM_SEARCH_EMBED_THREAD).toBe('on');
    expect(loadConfig({}).ENGRAM_ONNX_THREADS).toBe(1);
  });
});
