import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll } from '@jest/globals';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import { CHROMIUM_LAUNCH_OPTIONS, freePorts } from '@engram/testing';

/**
 * The Studio's browser tests: a real `npm start` (which builds the app, then serves it at
 * /studio on the all-in-one's port) on a free port and a fresh data directory, and Debian's
 * chromium driven by playwright-core (never a downloaded browser; scripts/ensure-chromium.sh).
 */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Git-ignored: each test writes a screenshot of every view it passes through. */
export const screenshotDir = join(repoRoot, 'apps/studio/test-output/screenshots');

export interface StudioServer {
  /** `http://127.0.0.1:PORT`: RPCs and `/studio/` on one port. */
  readonly url: string;
  readonly dataDir: string;
  /** stdout and stderr of `npm start` so far, for failure messages. */
  readonly output: () => string;
  readonly stop: () => Promise<void>;
}

/** Environment without the developer's credentials or server address. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const unset = new Set([
    'ENGRAM_TOKEN',
    'ENGRAM_USER',
    'ENGRAM_JWT_SECRET',
    'ENGRAM_DATA_DIR',
    'ENGRAM_ADDR',
  ]);
  return {
    ...Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !unset.has(name) && !name.startsWith('npm_')),
    ),
    ...extra,
  };
}

/** Runs `npm start` on the embedded defaults and waits for its "listening" line. */
export async function startStudioServer(extraEnv: Record<string, string> = {}): Promise<StudioServer> {
  const [port] = await freePorts(1);
  const dataDir = mkdtempSync(join(tmpdir(), 'engram-studio-'));
  const child: ChildProcess = spawn('npm', ['start'], {
    cwd: repoRoot,
    detached: true, // its own process group: npm, the build and the server stop together
    env: cleanEnv({
      ENGRAM_PORT: String(port ?? 0),
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_METRICS_PORT: 'off',
      ENGRAM_LOG_FORMAT: 'json',
      ...extraEnv,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolveExit) =>
    child.on('exit', (code) => {
      resolveExit(code);
    }),
  );
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`npm start did not listen in 120 s:\n${output}`));
    }, 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"msg":"engram all-in-one listening on (http:\/\/[^"]+)"/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited with ${String(code)} before listening:\n${output}`));
    });
  });
  return {
    url,
    dataDir,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      await exited;
    },
  };
}

/**
 * One `npm start` and one chromium for a test file: started in `beforeAll`, stopped in `afterAll`.
 * The returned function gives both (it throws when `beforeAll` failed, so every test fails with
 * the reason rather than `afterAll`).
 */
export function useStudio(
  extraEnv: Record<string, string> = {},
): () => { readonly server: StudioServer; readonly browser: Browser } {
  let server: StudioServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    server = await startStudioServer(extraEnv);
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });
  return () => {
    if (server === undefined || browser === undefined) {
      throw new Error('beforeAll did not start the server and the browser');
    }
    return { server, browser };
  };
}

/** Debian's chromium, headless, off the (closed) network (`@engram/testing`'s launch options). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ ...CHROMIUM_LAUNCH_OPTIONS, args: [...CHROMIUM_LAUNCH_OPTIONS.args] });
}

/**
 * A fresh page (its own context: no storage shared between tests) at the Studio, in `lang`,
 * collecting the page's console errors and failed requests into `problems`.
 */
export async function openStudio(
  browser: Browser,
  server: StudioServer,
  lang: 'en' | 'zh' = 'en',
): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({
    viewport: { width: 1366, height: 860 },
    locale: lang === 'zh' ? 'zh-CN' : 'en-GB',
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(`${server.url}/studio/`);
  return { page, problems };
}

/** Signs in through the local user picker, as `user` (and reviewer when `admin`). */
export async function signInAs(page: Page, user: string, admin = false): Promise<void> {
  await page.locator('input[name="user"]').fill(user);
  if (admin) await page.locator('input[name="admin"]').check();
  await page.locator('form.row button[type="submit"]').click();
  await page.locator('[data-testid="who"]').filter({ hasText: user }).waitFor();
}

/** Goes to a view through its navigation link. */
export async function openView(page: Page, view: string): Promise<void> {
  await page.locator(`nav a[data-view="${view}"]`).click();
  await page.locator(`nav a[data-view="${view}"][aria-current="page"]`).waitFor();
}

/** Writes `name`.png of the whole page into {@link screenshotDir}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: true });
}

/** A token for `user` of the local tenant, from the server's loopback sign-in. */
export async function localToken(server: StudioServer, user: string, admin = false): Promise<string> {
  const response = await fetch(`${server.url}/studio/local/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user, roles: admin ? ['admin'] : [] }),
  });
  const body = (await response.json()) as { token?: string };
  if (typeof body.token !== 'string') throw new Error(`no token: ${JSON.stringify(body)}`);
  return body.token;
}

export interface StudioClients {
  readonly governance: Client<typeof GovernanceService>;
  readonly ingestion: Client<typeof IngestionService>;
  readonly retrieval: Client<typeof RetrievalService>;
  readonly context: Client<typeof ContextService>;
}

/** gRPC clients as `token`, to prepare what a test then looks at in the browser. */
export function clientsAs(server: StudioServer, token: string): StudioClients {
  const transport = createGrpcTransport({
    baseUrl: server.url,
    interceptors: [
      (next) => (req) => {
        req.header.set('authorization', `Bearer ${token}`);
        return next(req);
      },
    ],
  });
  return {
    governance: createClient(GovernanceService, transport),
    ingestion: createClient(IngestionService, transport),
    retrieval: createClient(RetrievalService, transport),
    context: createClient(ContextService, transport),
  };
}
