/**
 * The Prometheus metrics OpenAIChatModel records in the process registry, against the scripted
 * OpenAI-compatible server (real HTTP, the real `openai` client).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { metricsRegistry } from '@engram/telemetry';
import type { ChatStreamEvent, OpenAIChatModel } from '../src/index.js';
import { modelAt, ScriptedServer } from './scripted-model.js';
import type { ScriptedReply } from './scripted-openai.js';

const server = new ScriptedServer();
afterEach(() => server.close());

async function modelFor(model: string, ...list: ScriptedReply[]): Promise<OpenAIChatModel> {
  return modelAt((await server.start(...list)).baseURL, { model, maxRetries: 0 });
}

/** The value of one series of the process registry, or undefined. */
async function sample(name: string, labels: Record<string, string>): Promise<number | undefined> {
  for (const metric of await metricsRegistry().getMetricsAsJSON()) {
    for (const value of metric.values) {
      const series = (value as { metricName?: string }).metricName ?? metric.name;
      if (series !== name) continue;
      if (Object.entries(labels).every(([k, v]) => String(value.labels[k]) === v)) return value.value;
    }
  }
  return undefined;
}

describe('model call metrics', () => {
  it('count the tokens and time the call of a JSON completion', async () => {
    const model = await modelFor('metrics-json', {
      content: '{"topic":"baking"}',
      promptTokens: 42,
      completionTokens: 7,
    });
    await model.completeJson({
      messages: [{ role: 'user', content: 'topic?' }],
      schema: z.object({ topic: z.string() }),
      schemaName: 'topic',
    });
    const labels = { model: 'metrics-json', operation: 'complete_json' };
    expect(await sample('engram_model_tokens_total', { ...labels, kind: 'prompt' })).toBe(42);
    expect(await sample('engram_model_tokens_total', { ...labels, kind: 'completion' })).toBe(7);
    expect(await sample('engram_model_call_duration_seconds_count', { ...labels, outcome: 'ok' })).toBe(1);
  });

  it('count the tokens of a streamed reply and time it to its end, and count a failed call as an error', async () => {
    const model = await modelFor(
      'metrics-stream',
      { content: 'Knead for ten minutes.', promptTokens: 31, completionTokens: 6 },
      { status: 400, message: 'bad request' },
    );
    const drain = async (stream: AsyncIterable<ChatStreamEvent>) => {
      for await (const _ of stream) {
        // read to the end
      }
    };
    const messages = [{ role: 'user' as const, content: 'How long should I knead?' }];
    await drain(model.streamChat({ messages }));
    await expect(drain(model.streamChat({ messages }))).rejects.toThrow();
    const labels = { model: 'metrics-stream', operation: 'stream_chat' };
    expect(await sample('engram_model_tokens_total', { ...labels, kind: 'prompt' })).toBe(31);
    expect(await sample('engram_model_tokens_total', { ...labels, kind: 'completion' })).toBe(6);
    expect(await sample('engram_model_call_duration_seconds_count', { ...labels, outcome: 'ok' })).toBe(1);
    expect(await sample('engram_model_call_duration_seconds_count', { ...labels, outcome: 'error' })).toBe(1);
  });
});
