/**
 * Runs the real model (no mocks): `npm install` puts it in <workspace>/.models (or ENGRAM_MODEL_DIR).
 * onnxruntime-node needs the host's typed arrays inside Jest's sandbox (jest.environment.mjs).
 */
import { readdirSync } from 'node:fs';
import { cp, mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { isEngramError } from '@engram/errors';
import { BGE_ZH_QUERY_INSTRUCTION, LOCAL_MODEL_ID, LocalEmbedder } from './local-embedder.js';
import {
  LOCAL_MODEL_FILES,
  LOCAL_MODEL_NAME,
  MINILM_MODEL_NAME,
  inferenceSessionOptions,
  resolveModelRoot,
} from './local-model.js';

const modelRoot = resolveModelRoot(process.env['ENGRAM_MODEL_DIR']);

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}

function norm(v: Float32Array): number {
  return Math.sqrt(cosine(v, v));
}

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('LocalEmbedder', () => {
  const embedder = new LocalEmbedder({ modelRoot });

  beforeAll(async () => {
    await embedder.load();
  });
  afterAll(async () => {
    await embedder.close();
  });

  it('returns one unit-length 512-dimensional vector per text with the model id', async () => {
    const result = await embedder.embed(['我喜欢简洁的回答', 'I prefer concise answers'], 'document');
    expect(result.model).toBe(LOCAL_MODEL_ID);
    expect(result.model).toBe('BAAI/bge-small-zh-v1.5@q8');
    expect(result.dimensions).toBe(512);
    expect(result.vectors).toHaveLength(2);
    expect(result.truncated).toEqual([false, false]);
    for (const vector of result.vectors) {
      expect(vector).toBeInstanceOf(Float32Array);
      expect(vector).toHaveLength(512);
      expect(norm(vector)).toBeCloseTo(1, 5);
    }
    expect(cosine(result.vectors[0]!, result.vectors[1]!)).toBeLessThan(0.999);
  });

  it('gives a text the identical vector alone and anywhere inside a batch', async () => {
    const text = '用户喜欢在周末去爬山，并且不喜欢吃辣。';
    const alone = (await embedder.embed([text], 'document')).vectors[0]!;
    const batch = await embedder.embed(
      ['短', text, 'A much longer English sentence that pads a batched tensor with many extra tokens.', text],
      'document',
    );
    expect(batch.vectors[1]).toEqual(alone);
    expect(batch.vectors[3]).toEqual(alone);
    expect(Buffer.from(batch.vectors[1]!.buffer).equals(Buffer.from(alone.buffer))).toBe(true);
  });

  it('gives concurrent callers the same vectors as sequential ones', async () => {
    const texts = ['我住在上海', 'I live in Shanghai', '明天开会', 'meeting tomorrow'];
    const sequential = await embedder.embed(texts, 'document');
    const [first, second] = await Promise.all([
      embedder.embed(texts, 'document'),
      embedder.embed([...texts].reverse(), 'document'),
    ]);
    expect(first.vectors).toEqual(sequential.vectors);
    expect(second.vectors).toEqual([...sequential.vectors].reverse());
  });

  it('ranks paraphrases above unrelated sentences in Chinese and in English', async () => {
    const [zh, zhParaphrase, zhUnrelated, en, enParaphrase, enUnrelated] = (
      await embedder.embed(
        [
          '我喜欢简洁的回答',
          '我更喜欢简短的答复',
          '今天天气很好',
          'I prefer concise answers',
          'I like short, to-the-point replies',
          'The weather is nice today',
        ],
        'document',
      )
    ).vectors as [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
    expect(cosine(zh, zhParaphrase)).toBeGreaterThan(cosine(zh, zhUnrelated) + 0.2);
    expect(cosine(en, enParaphrase)).toBeGreaterThan(cosine(en, enUnrelated) + 0.1);
    // Across languages: the English translation is closer than an unrelated English sentence.
    expect(cosine(zh, en)).toBeGreaterThan(cosine(zh, enUnrelated));
  });

  it('finds the English translation of each Chinese sentence among English candidates', async () => {
    const zh = [
      '我喜欢简洁的回答',
      '今天天气很好',
      '我对花生过敏',
      '我的猫叫小白',
      '我下周要去北京出差',
      '我在一家银行工作',
    ];
    const en = [
      'I prefer concise answers',
      'The weather is nice today',
      'I am allergic to peanuts',
      'My cat is called Xiaobai',
      'I am going on a business trip to Beijing next week',
      'I work at a bank',
    ];
    const queries = (await embedder.embed(zh, 'query')).vectors;
    const documents = (await embedder.embed(en, 'document')).vectors;
    const best = queries.map((q) => {
      const scores = documents.map((d) => cosine(q, d));
      return scores.indexOf(Math.max(...scores));
    });
    expect(best).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('reports a text over 512 tokens as truncated and embeds only its first 512 tokens', async () => {
    const head = '记忆服务需要可靠地保存用户的偏好。'.repeat(40); // ~680 tokens
    const result = await embedder.embed(
      [head.slice(0, 100), `${head}结尾甲`, `${head}完全不同的结尾乙`],
      'document',
    );
    expect(result.truncated).toEqual([false, true, true]);
    // Only the shared beginning was embedded.
    expect(result.vectors[1]).toEqual(result.vectors[2]);
    expect(norm(result.vectors[1]!)).toBeCloseTo(1, 5);
  });

  it('embeds queries like documents unless a query instruction is configured', async () => {
    const text = '用户的饮食偏好是什么？';
    const asQuery = await embedder.embed([text], 'query');
    const asDocument = await embedder.embed([text], 'document');
    expect(asQuery.vectors).toEqual(asDocument.vectors);

    const instructed = new LocalEmbedder({ modelRoot, queryInstruction: BGE_ZH_QUERY_INSTRUCTION });
    try {
      const query = (await instructed.embed([text], 'query')).vectors[0]!;
      const document = (await instructed.embed([text], 'document')).vectors[0]!;
      expect(document).toEqual(asDocument.vectors[0]);
      expect(query).toEqual((await embedder.embed([BGE_ZH_QUERY_INSTRUCTION + text], 'document')).vectors[0]);
      expect(cosine(query, document)).toBeLessThan(0.999);
    } finally {
      await instructed.close();
    }
  });

  it('returns an empty result for no texts and rejects an empty text', async () => {
    expect(await embedder.embed([], 'document')).toEqual({
      vectors: [],
      truncated: [],
      model: LOCAL_MODEL_ID,
      dimensions: 512,
    });
    const error = await rejection(embedder.embed(['ok', ''], 'document'));
    expect(isEngramError(error) && error.reason).toBe('FIELD_INVALID');
    expect(isEngramError(error) && error.metadata).toEqual({ field: 'texts[1]' });
  });

  it('stops between texts when the signal aborts, rejecting with its reason', async () => {
    const already = new AbortController();
    already.abort(new Error('caller gave up'));
    await expect(embedder.embed(['a'], 'document', { signal: already.signal })).rejects.toThrow(
      'caller gave up',
    );

    const controller = new AbortController();
    const texts = Array.from({ length: 2000 }, (_, i) => `第${i}条需要嵌入的记忆，内容稍微长一点。`);
    const started = performance.now();
    setTimeout(() => {
      controller.abort(new Error('deadline'));
    }, 50);
    await expect(embedder.embed(texts, 'document', { signal: controller.signal })).rejects.toThrow(
      'deadline',
    );
    // 2000 texts take several seconds; stopping between texts ends the call almost at once.
    expect(performance.now() - started).toBeLessThan(1000);
    // The shared model keeps working for other calls.
    expect((await embedder.embed(['还能用'], 'document')).vectors).toHaveLength(1);
  });

  it('runs each inference on the calling thread unless more ONNX threads are asked for', async () => {
    // The OS threads of this process: ONNX Runtime starts its intra-op pool with the session.
    const threads = () => readdirSync('/proc/self/task').length;
    const text = '我喜欢简洁的回答, and concise answers';
    const before = threads();
    const minilm = new LocalEmbedder({ modelRoot, model: MINILM_MODEL_NAME });
    await minilm.embed([text], 'document');
    expect(threads()).toBe(before);
    const pooled = new LocalEmbedder({ modelRoot, threads: 2 });
    try {
      const [own] = (await pooled.embed([text], 'document')).vectors;
      // Its own session (a pool of two: one more thread), not the shared one-thread session.
      expect(threads()).toBe(before + 1);
      expect(own).toEqual((await embedder.embed([text], 'document')).vectors[0]);
    } finally {
      await Promise.all([minilm.close(), pooled.close()]);
    }
  });

  it('refuses a thread count that is not an integer ≥ 0', () => {
    for (const threads of [-1, 1.5, Number.NaN]) {
      let error: unknown;
      try {
        new LocalEmbedder({ modelRoot, threads });
      } catch (caught) {
        error = caught;
      }
      expect(isEngramError(error) && error.reason).toBe('FIELD_INVALID');
    }
    expect(inferenceSessionOptions(0)).toEqual({});
    expect(inferenceSessionOptions(1)).toEqual({ intraOpNumThreads: 1 });
    expect(() => inferenceSessionOptions(-1)).toThrow('threads is invalid');
  });

  it('rejects use after close', async () => {
    const other = new LocalEmbedder({ modelRoot });
    await other.embed(['x'], 'document');
    await other.close();
    await other.close();
    const error = await rejection(other.embed(['x'], 'document'));
    expect(isEngramError(error) && error.reason).toBe('STATE_CONFLICT');
    // Closing one embedder leaves the model loaded for the others.
    expect((await embedder.embed(['仍然可用'], 'document')).vectors).toHaveLength(1);
  });
});

describe('LocalEmbedder model verification', () => {
  let corruptRoot: string;

  beforeAll(async () => {
    corruptRoot = await mkdtemp(join(tmpdir(), 'engram-model-corrupt-'));
    await cp(join(modelRoot, LOCAL_MODEL_NAME), join(corruptRoot, LOCAL_MODEL_NAME), { recursive: true });
    const onnx = join(corruptRoot, LOCAL_MODEL_NAME, 'onnx/model_quantized.onnx');
    const handle = await open(onnx, 'r+');
    try {
      // Flip one byte in the middle of the weights: still a loadable file, but not the pinned one.
      const { size } = await handle.stat();
      const byte = Buffer.alloc(1);
      await handle.read(byte, 0, 1, Math.floor(size / 2));
      byte[0] = byte[0]! ^ 0xff;
      await handle.write(byte, 0, 1, Math.floor(size / 2));
    } finally {
      await handle.close();
    }
  });
  afterAll(async () => {
    await rm(corruptRoot, { recursive: true, force: true });
  });

  it('refuses to load an ONNX file whose sha256 differs from the pinned one', async () => {
    const embedder = new LocalEmbedder({ modelRoot: corruptRoot });
    const error = await rejection(embedder.embed(['你好'], 'document'));
    expect(isEngramError(error)).toBe(true);
    if (!isEngramError(error)) return;
    expect(error.reason).toBe('MODEL_NOT_CONFIGURED');
    expect(error.metadata).toEqual({ model: LOCAL_MODEL_NAME, file: 'onnx/model_quantized.onnx' });
    expect(error.message).toContain('fails verification');
    expect(error.message).toContain(LOCAL_MODEL_FILES['onnx/model_quantized.onnx']);
    // Still refused on the next call: a failed verification is not cached as a success.
    await expect(embedder.embed(['你好'], 'document')).rejects.toThrow('fails verification');
    await embedder.close();
  });

  it('says how to fetch the model when its files are missing', async () => {
    const embedder = new LocalEmbedder({ modelRoot: join(corruptRoot, 'nowhere') });
    const error = await rejection(embedder.load());
    expect(isEngramError(error) && error.reason).toBe('MODEL_NOT_CONFIGURED');
    expect(String(error)).toContain('npm run fetch-model');
  });

  it('pins the same file hashes as scripts/fetch-model.mjs', async () => {
    const script = await readFile(new URL('../../../scripts/fetch-model.mjs', import.meta.url), 'utf8');
    for (const [file, sha256] of Object.entries(LOCAL_MODEL_FILES)) {
      expect(script).toContain(`'${file}': '${sha256}'`);
    }
  });
});
