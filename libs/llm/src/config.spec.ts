import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ConfigError, parseEnv } from '@engram/config';
import { chatModelFromEnv, llmEnvShape } from './config.js';

const schema = z.object(llmEnvShape);
const parse = (env: Record<string, string | undefined>) => parseEnv(schema, env);

/** The problems of the ConfigError `run` throws (fails the test when it does not throw one). */
function problems(run: () => unknown): ConfigError['problems'] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const dir = mkdtempSync(join(tmpdir(), 'engram-llm-config-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('llmEnvShape', () => {
  it('fills the documented defaults and leaves the model unset', () => {
    expect(parse({})).toEqual({
      ENGRAM_LLM_BASE_URL: undefined,
      ENGRAM_LLM_API_KEY: undefined,
      ENGRAM_LLM_API_KEY_FILE: undefined,
      ENGRAM_LLM_MODEL: undefined,
      ENGRAM_LLM_TIMEOUT_MS: 60_000,
      ENGRAM_LLM_MAX_RETRIES: 2,
    });
  });

  it('treats empty strings as unset', () => {
    const env = parse({ ENGRAM_LLM_BASE_URL: '', ENGRAM_LLM_MODEL: '', ENGRAM_LLM_TIMEOUT_MS: '' });
    expect(env.ENGRAM_LLM_BASE_URL).toBeUndefined();
    expect(env.ENGRAM_LLM_MODEL).toBeUndefined();
    expect(env.ENGRAM_LLM_TIMEOUT_MS).toBe(60_000);
  });

  it('parses the numbers', () => {
    const env = parse({ ENGRAM_LLM_TIMEOUT_MS: '15000', ENGRAM_LLM_MAX_RETRIES: '0' });
    expect(env.ENGRAM_LLM_TIMEOUT_MS).toBe(15_000);
    expect(env.ENGRAM_LLM_MAX_RETRIES).toBe(0);
  });

  it('names each bad variable', () => {
    const found = problems(() =>
      parse({
        ENGRAM_LLM_BASE_URL: 'localhost:11434',
        ENGRAM_LLM_TIMEOUT_MS: '10',
        ENGRAM_LLM_MAX_RETRIES: 'many',
      }),
    );
    expect(found.map((p) => p.variable).sort()).toEqual([
      'ENGRAM_LLM_BASE_URL',
      'ENGRAM_LLM_MAX_RETRIES',
      'ENGRAM_LLM_TIMEOUT_MS',
    ]);
    expect(found.find((p) => p.variable === 'ENGRAM_LLM_BASE_URL')?.message).toMatch(/http\(s\) URL/u);
    expect(found.find((p) => p.variable === 'ENGRAM_LLM_TIMEOUT_MS')?.message).toMatch(/1000 to 600000/u);
  });

  it('rejects a URL that is not http or https', () => {
    const found = problems(() => parse({ ENGRAM_LLM_BASE_URL: 'ftp://models.example/v1' }));
    expect(found.map((p) => p.variable)).toEqual(['ENGRAM_LLM_BASE_URL']);
  });
});

describe('chatModelFromEnv', () => {
  it('returns undefined when no model is configured', () => {
    expect(chatModelFromEnv(parse({}))).toBeUndefined();
    expect(
      chatModelFromEnv(parse({ ENGRAM_LLM_API_KEY: 'k', ENGRAM_LLM_TIMEOUT_MS: '5000' })),
    ).toBeUndefined();
  });

  it('returns a model when the base URL and the model are set', () => {
    const model = chatModelFromEnv(
      parse({ ENGRAM_LLM_BASE_URL: 'http://127.0.0.1:11434/v1', ENGRAM_LLM_MODEL: 'qwen2.5:7b' }),
    );
    expect(model?.model).toBe('qwen2.5:7b');
  });

  it('fails when only one of the base URL and the model is set', () => {
    expect(
      problems(() => chatModelFromEnv(parse({ ENGRAM_LLM_BASE_URL: 'https://api.example/v1' }))),
    ).toEqual([
      {
        variable: 'ENGRAM_LLM_MODEL',
        message: expect.stringMatching(/ENGRAM_LLM_BASE_URL is set/u) as unknown,
      },
    ]);
    expect(problems(() => chatModelFromEnv(parse({ ENGRAM_LLM_MODEL: 'gpt-4o-mini' })))).toEqual([
      {
        variable: 'ENGRAM_LLM_BASE_URL',
        message: expect.stringMatching(/ENGRAM_LLM_MODEL is set/u) as unknown,
      },
    ]);
  });

  it('reads the key from a file and fails naming the file variable when it cannot', () => {
    const keyFile = join(dir, 'key');
    writeFileSync(keyFile, 'sk-test\n');
    const configured = { ENGRAM_LLM_BASE_URL: 'https://api.example/v1', ENGRAM_LLM_MODEL: 'm' };
    expect(chatModelFromEnv(parse({ ...configured, ENGRAM_LLM_API_KEY_FILE: keyFile }))?.model).toBe('m');

    const missing = problems(() =>
      chatModelFromEnv(parse({ ...configured, ENGRAM_LLM_API_KEY_FILE: join(dir, 'absent') })),
    );
    expect(missing).toEqual([
      { variable: 'ENGRAM_LLM_API_KEY_FILE', message: expect.stringMatching(/ENOENT/u) as unknown },
    ]);

    const empty = join(dir, 'empty');
    writeFileSync(empty, ' \n');
    expect(
      problems(() => chatModelFromEnv(parse({ ...configured, ENGRAM_LLM_API_KEY_FILE: empty })))[0]?.message,
    ).toMatch(/is empty/u);
  });

  it('refuses both a key and a key file', () => {
    const found = problems(() =>
      chatModelFromEnv(
        parse({
          ENGRAM_LLM_BASE_URL: 'https://api.example/v1',
          ENGRAM_LLM_MODEL: 'm',
          ENGRAM_LLM_API_KEY: 'k',
          ENGRAM_LLM_API_KEY_FILE: '/dev/null',
        }),
      ),
    );
    expect(found.map((p) => p.variable)).toEqual(['ENGRAM_LLM_API_KEY_FILE']);
  });
});
