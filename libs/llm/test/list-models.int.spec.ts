/**
 * OpenAIChatModel.listModels against the scripted OpenAI-compatible server (real HTTP, the real
 * `openai` client): the endpoint's list, and `undefined` for an endpoint without the route.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from '@jest/globals';
import { isEngramError } from '@engram/errors';
import { OpenAIChatModel } from '../src/index.js';
import { replies, startScriptedOpenAI, type ScriptedOpenAI } from './scripted-openai.js';

let server: ScriptedOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('OpenAIChatModel.listModels', () => {
  it("returns the endpoint's models", async () => {
    server = await startScriptedOpenAI(replies(), { models: ['alpha', 'beta'] });
    const model = new OpenAIChatModel({ baseURL: server.baseURL, model: 'alpha', maxRetries: 0 });
    await expect(model.listModels()).resolves.toEqual([
      { id: 'alpha', created: 0, ownedBy: 'scripted' },
      { id: 'beta', created: 0, ownedBy: 'scripted' },
    ]);
  });

  it('returns undefined when the endpoint has no /models route', async () => {
    server = await startScriptedOpenAI(replies());
    const model = new OpenAIChatModel({ baseURL: server.baseURL, model: 'alpha', maxRetries: 0 });
    await expect(model.listModels()).resolves.toBeUndefined();
  });

  it('fails with DEPENDENCY_UNAVAILABLE when the endpoint fails', async () => {
    const failing = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'boom', type: 'server_error' } }));
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = failing.address() as AddressInfo;
      const model = new OpenAIChatModel({
        baseURL: `http://127.0.0.1:${port}/v1`,
        model: 'a',
        maxRetries: 0,
      });
      const error = await model.listModels().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isEngramError(error) && [error.code, error.reason, error.metadata]).toEqual([
        Code.Unavailable,
        'DEPENDENCY_UNAVAILABLE',
        { dependency: 'model' },
      ]);
    } finally {
      await new Promise((resolve) => failing.close(resolve));
    }
  });
});
