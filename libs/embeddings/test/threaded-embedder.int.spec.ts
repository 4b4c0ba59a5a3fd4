import { afterAll, describe, expect, it } from '@jest/globals';
import { metricsRegistry } from '@engram/telemetry';
import { startedThreadNiceness, threadNiceness } from '@engram/testing';
import { ThreadedEmbedder, localEmbedder, resolveModelRoot, type LocalEmbedderRecipe } from '../src/index.js';

const recipe: LocalEmbedderRecipe = { kind: 'bilingual', modelRoot: resolveModelRoot(undefined) };
const texts = [
  '我们明天去杭州看西湖的风景。',
  'The quarterly budget review moves to Thursday afternoon.',
  'Der schnelle braune Fuchs springt über den faulen Hund.',
];

describe('ThreadedEmbedder (the real local models on a worker thread)', () => {
  const threaded = new ThreadedEmbedder(recipe);
  const local = localEmbedder(recipe);
  afterAll(async () => {
    await threaded.close();
    await local.close();
  });

  it('answers exactly what the same embedder answers on the main thread', async () => {
    expect([threaded.model, threaded.dimensions]).toEqual([local.model, local.dimensions]);
    const [off, on] = await Promise.all([threaded.embed(texts, 'document'), local.embed(texts, 'document')]);
    expect(off.vectors.map((v) => Array.from(v))).toEqual(on.vectors.map((v) => Array.from(v)));
    expect(off.truncated).toEqual(on.truncated);
    const query = await threaded.embed(['西湖'], 'query');
    expect(Array.from(query.vectors[0]!)).toEqual(
      Array.from((await local.embed(['西湖'], 'query')).vectors[0]!),
    );
  });

  it('records the embedding metrics on the calling thread, under its model', async () => {
    const texts = async () => {
      const metric = await metricsRegistry().getSingleMetric('engram_embedding_texts_total')?.get();
      return metric?.values.find((v) => v.labels['model'] === threaded.model)?.value ?? 0;
    };
    const before = await texts();
    await threaded.embed(['一', 'two'], 'document');
    expect(await texts()).toBe(before + 2);
  });

  it('passes the model’s errors on with their code and reason, and rejects an aborted call', async () => {
    await expect(threaded.embed([''], 'document')).rejects.toMatchObject({ reason: 'FIELD_INVALID' });
    const controller = new AbortController();
    const call = threaded.embed(texts, 'document', { signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(call).rejects.toThrow('stop');
    // The thread goes on serving.
    expect((await threaded.embed(['again'], 'document')).vectors).toHaveLength(1);
  });

  it('runs its thread, and the inference threads it starts, at the recipe’s niceness, the rest of the process untouched', async () => {
    expect(process.platform).toBe('linux');
    const before = threadNiceness();
    const niced = new ThreadedEmbedder({ ...recipe, nice: 7, threads: 2 });
    try {
      expect((await niced.embed(texts, 'document')).vectors).toHaveLength(texts.length);
      const after = threadNiceness();
      // This process's main thread (its tid is the pid) and every thread that was there before keep theirs.
      expect(after.get(process.pid)).toBe(0);
      for (const [tid, nice] of before) if (after.has(tid)) expect(after.get(tid)).toBe(nice);
      const started = startedThreadNiceness(before, after);
      // The worker thread and ONNX Runtime's intra-op thread of each of the two models.
      expect(started.filter((nice) => nice === 7).length).toBeGreaterThanOrEqual(3);
    } finally {
      await niced.close();
    }
  });

  it('refuses calls after close', async () => {
    const other = new ThreadedEmbedder({ kind: 'local', modelRoot: resolveModelRoot(undefined) });
    expect((await other.embed(['hello'], 'document')).vectors[0]).toHaveLength(other.dimensions);
    await other.close();
    await expect(other.embed(['hello'], 'document')).rejects.toMatchObject({
      reason: 'DEPENDENCY_UNAVAILABLE',
    });
  });
});
