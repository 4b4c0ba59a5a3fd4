/**
 * The standalone ingestion process's own embedding model for the offline topic-shift detector
 * (resources.ts): the real local model on a worker thread of its own (ENGRAM_SEGMENTER_EMBED_THREAD
 * on, the default), or on the event loop.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ThreadedEmbedder, type Embedder } from '@engram/embeddings';
import { startedThreadNiceness, threadNiceness } from '@engram/testing';
import { governanceEnvShape } from '../src/config.js';
import { segmenterEmbedder } from '../src/resources.js';

const parse = (env: Record<string, string>) => z.object(governanceEnvShape).parse(env);
const opened: Embedder[] = [];
const open = (embedder: Embedder) => (opened.push(embedder), embedder);

afterEach(async () => {
  await Promise.all(opened.splice(0).map((e) => e.close()));
});

describe('the topic-shift detector’s embedder', () => {
  it('runs on a thread of its own by default, with the vectors of the inline model', async () => {
    const threaded = open(segmenterEmbedder(parse({})));
    const inline = open(segmenterEmbedder(parse({ ENGRAM_SEGMENTER_EMBED_THREAD: 'off' })));
    expect(threaded).toBeInstanceOf(ThreadedEmbedder);
    expect(inline).not.toBeInstanceOf(ThreadedEmbedder);
    expect([threaded.model, threaded.dimensions]).toEqual([inline.model, inline.dimensions]);
    const texts = ['We talked about the trip to Lisbon.', '我们聊了去里斯本的旅行。'];
    const [a, b] = await Promise.all([threaded.embed(texts, 'document'), inline.embed(texts, 'document')]);
    expect(a.vectors.map((v) => Array.from(v))).toEqual(b.vectors.map((v) => Array.from(v)));
  });

  it('runs its thread at ENGRAM_SEGMENTER_EMBED_NICE (10 by default), the process untouched', async () => {
    const before = threadNiceness();
    const threaded = open(segmenterEmbedder(parse({})));
    await threaded.embed(['a background judgement'], 'document');
    const after = threadNiceness();
    expect(startedThreadNiceness(before, after)).toContain(10);
    expect(after.get(process.pid)).toBe(0);
    const other = open(segmenterEmbedder(parse({ ENGRAM_SEGMENTER_EMBED_NICE: '3' })));
    await other.embed(['another'], 'document');
    expect(startedThreadNiceness(after, threadNiceness())).toContain(3);
    expect(() => parse({ ENGRAM_SEGMENTER_EMBED_NICE: '20' })).toThrow();
  });

  it('refuses a value other than on and off', () => {
    expect(parse({}).ENGRAM_SEGMENTER_EMBED_THREAD).toBe('on');
    expect(() => parse({ ENGRAM_SEGMENTER_EMBED_THREAD: 'maybe' })).toThrow();
  });
});
