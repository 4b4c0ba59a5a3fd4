/**
 * Which embedder a configuration gets (resources.ts): the real local models, on a worker thread of
 * their own for Search (ENGRAM_SEARCH_EMBED_THREAD, decision 0042) and for the indexer
 * (ENGRAM_INDEX_EMBED_THREAD, decision 0032), or on the calling thread.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ThreadedEmbedder, type Embedder } from '@engram/embeddings';
import { startedThreadNiceness, threadNiceness } from '@engram/testing';
import { retrievalEnvShape } from '../src/config.js';
import { createEmbedder, createIndexEmbedder } from '../src/resources.js';

const parse = (env: Record<string, string>) => z.object(retrievalEnvShape).parse(env);
const opened: Embedder[] = [];
const open = (embedder: Embedder) => (opened.push(embedder), embedder);

afterEach(async () => {
  await Promise.all(opened.splice(0).map((e) => e.close()));
});

describe('the embedders of a configuration', () => {
  it('embeds queries on a thread of their own by default, with the vectors of the inline models', async () => {
    const threaded = open(createEmbedder(parse({})));
    const inline = open(createEmbedder(parse({ ENGRAM_SEARCH_EMBED_THREAD: 'off' })));
    expect(threaded).toBeInstanceOf(ThreadedEmbedder);
    expect(inline).not.toBeInstanceOf(ThreadedEmbedder);
    expect([threaded.model, threaded.dimensions]).toEqual([inline.model, inline.dimensions]);
    const query = ['what did Caroline research?', '卡罗琳研究了什么？'];
    const [a, b] = await Promise.all([threaded.embed(query, 'query'), inline.embed(query, 'query')]);
    expect(a.vectors.map((v) => Array.from(v))).toEqual(b.vectors.map((v) => Array.from(v)));
  });

  it('gives the indexer its own thread, or the search embedder itself when that is off', () => {
    const config = parse({});
    const search = open(createEmbedder(config));
    const indexer = open(createIndexEmbedder(config, search));
    expect(indexer).toBeInstanceOf(ThreadedEmbedder);
    expect(indexer).not.toBe(search);
    const shared = parse({ ENGRAM_INDEX_EMBED_THREAD: 'off' });
    const alone = open(createEmbedder(shared));
    expect(createIndexEmbedder(shared, alone)).toBe(alone);
  });

  it('runs the indexer’s thread at ENGRAM_INDEX_EMBED_NICE (10 by default) and the query thread at 0 (decision 0047)', async () => {
    const config = parse({});
    const before = threadNiceness();
    const search = open(createEmbedder(config));
    await search.embed(['a query'], 'query');
    const withSearch = threadNiceness();
    expect(startedThreadNiceness(before, withSearch).filter((nice) => nice !== 0)).toEqual([]);
    const indexer = open(createIndexEmbedder(config, search));
    await indexer.embed(['a passage'], 'document');
    const withIndexer = threadNiceness();
    expect(startedThreadNiceness(withSearch, withIndexer)).toContain(10);
    expect(withIndexer.get(process.pid)).toBe(0);
    expect(parse({ ENGRAM_INDEX_EMBED_NICE: '0' }).ENGRAM_INDEX_EMBED_NICE).toBe(0);
    expect(() => parse({ ENGRAM_INDEX_EMBED_NICE: '-1' })).toThrow();
  });

  it('takes the ONNX thread count from ENGRAM_ONNX_THREADS (0–64)', () => {
    expect(parse({}).ENGRAM_ONNX_THREADS).toBe(1);
    expect(parse({ ENGRAM_ONNX_THREADS: '0' }).ENGRAM_ONNX_THREADS).toBe(0);
    expect(() => parse({ ENGRAM_ONNX_THREADS: '65' })).toThrow();
    expect(() => parse({ ENGRAM_SEARCH_EMBED_THREAD: 'maybe' })).toThrow();
  });
});
