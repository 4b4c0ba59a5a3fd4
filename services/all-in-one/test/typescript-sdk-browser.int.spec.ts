import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_LAUNCH_OPTIONS } from '@engram/testing';
import { newSecret, repoRoot, runCommand, explainRun, startServer, tempDir, tokenFor } from './harness.js';

// @engram/client in a real browser (Debian's chromium through playwright-core): the SDK's browser
// entry, bundled by Vite as an application would, runs in a page served from the server's own
// origin and calls the real all-in-one over fetch with the Connect and gRPC-Web protocols.
// Only the page and the bundle are served by the test (page.route); every RPC goes to the server.

const SDK_DIR = join(repoRoot, 'clients/typescript');
const secret = newSecret();
const out = tempDir();
let browser: Browser | undefined;
let stop: (() => Promise<void>) | undefined;
let origin: string;
let bundle: string;

beforeAll(async () => {
  const built = await runCommand('node', ['scripts/build.mjs'], {
    cwd: SDK_DIR,
    timeoutMs: 180_000,
    inherit: true,
  });
  if (built.code !== 0) throw new Error(explainRun('the SDK build', built));
  // Vite in its own process: its native bundler (rolldown) does not run inside Jest's VM modules.
  const viteScript = [
    "import { build } from 'vite';",
    'await build({ configFile: false, logLevel: "warn", build: {',
    `  lib: { entry: ${JSON.stringify(join(SDK_DIR, 'dist/index.js'))}, formats: ['es'], fileName: () => 'engram-client.js' },`,
    `  outDir: ${JSON.stringify(out)}, emptyOutDir: true, minify: false } });`,
  ].join('\n');
  const bundled = await runCommand('node', ['--input-type=module', '-e', viteScript], {
    cwd: repoRoot,
    timeoutMs: 180_000,
    inherit: true,
  });
  if (bundled.code !== 0) throw new Error(explainRun('vite build of the SDK', bundled));
  bundle = readFileSync(join(out, 'engram-client.js'), 'utf8');
  const started = await startServer(secret);
  stop = started.stop;
  origin = started.server.url.replace(/\/$/, '');
  browser = await chromium.launch({ ...CHROMIUM_LAUNCH_OPTIONS, args: [...CHROMIUM_LAUNCH_OPTIONS.args] });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await stop?.();
});

/** What the page does with the SDK, as one script; it resolves with a summary. */
const SCRIPT = `
const { Engram, EngramError, MemoryType, MessageRole } = await import('/__sdk/engram-client.js');
const { token, stranger, transport, marker } = window.__input;
const engram = new Engram({ baseUrl: location.origin, token, transport });
const summary = { transport, nodeBuiltins: typeof process === 'undefined' };
const session = await engram.sessions.create({ displayName: 'browser ' + transport });
summary.session = session.name;
const appended = await engram.sessions.append(session.name, [
  { role: MessageRole.USER, content: 'I keep my kayak at pier ' + marker + '.' },
  { role: MessageRole.ASSISTANT, content: 'Noted.' },
]);
summary.appended = appended.messages.length;
for (let i = 0; i < 3; i++) {
  await engram.memories.create({ memory: { type: MemoryType.FACT, namespace: 'browser', key: transport + '_' + i, value: { i }, text: 'Browser fact ' + i + ' about ' + marker } });
}
let listed = 0;
for await (const _ of engram.memories.list({ pageSize: 2, namespaces: ['browser'] })) listed += 1;
summary.listed = listed;
let found = false;
for (let i = 0; i < 100 && !found; i++) {
  const { results } = await engram.search({ query: marker, topK: 10 });
  found = results.some((r) => r.item.case === 'memory' && r.item.value.text.includes(marker));
  if (!found) await new Promise((r) => setTimeout(r, 200));
}
summary.searchFound = found;
const built = await engram.context.build({ session: session.name, userMessage: 'Where is my kayak?', budget: { totalTokens: 2000 } });
summary.contextMessages = built.messages.length;
try {
  await new Engram({ baseUrl: location.origin, token: stranger, transport }).sessions.get(session.name);
  summary.strangerError = 'none';
} catch (error) {
  summary.strangerError = error instanceof EngramError ? error.codeName + ' ' + error.reason : String(error);
}
try {
  await new Engram({ baseUrl: location.origin, transport }).sessions.get(session.name);
} catch (error) {
  summary.noTokenError = error instanceof EngramError ? error.codeName + ' ' + error.reason : String(error);
}
const lines = [];
for await (const line of engram.portability.export()) lines.push(line);
summary.exportFormat = JSON.parse(lines[0]).format;
return summary;
`;

describe('@engram/client in chromium, bundled by Vite, against a live server', () => {
  it.each(['connect', 'grpc-web'] as const)(
    'over %s: sessions, memories, search, context, errors, export',
    async (transport) => {
      const context = await browser!.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      await page.route(`${origin}/__sdk/**`, (route) => {
        const url = route.request().url();
        return url.endsWith('/engram-client.js')
          ? route.fulfill({ contentType: 'text/javascript', body: bundle })
          : route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>sdk</title>' });
      });
      await page.goto(`${origin}/__sdk/index.html`);
      const input = {
        token: await tokenFor(secret, { subject: `browser-${transport}`, tenantId: 'web' }),
        stranger: await tokenFor(secret, { subject: 'stranger', tenantId: 'web' }),
        transport,
        marker: `quokka${transport.replace('-', '')}${String(Date.now())}`,
      };
      await page.evaluate((value) => {
        (globalThis as unknown as { __input: unknown }).__input = value;
      }, input);
      const summary = await page.evaluate<Record<string, unknown>>(`(async () => { ${SCRIPT} })()`);
      await context.close();
      expect(problems).toEqual([]);
      expect(summary).toMatchObject({
        transport,
        nodeBuiltins: true,
        session: expect.stringMatching(/^sessions\/[0-9A-Z]{26}$/),
        appended: 2,
        listed: 3,
        searchFound: true,
        strangerError: 'NOT_FOUND RESOURCE_NOT_FOUND',
        noTokenError: 'UNAUTHENTICATED TOKEN_MISSING',
        exportFormat: 'engram.export',
      });
      expect(summary['contextMessages']).toBeGreaterThanOrEqual(2);
    },
    120_000,
  );
});
