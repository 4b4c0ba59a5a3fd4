import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseTokenRequest } from '../src/studio/local-signin.js';
import { studioHandler } from '../src/studio/studio.js';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

function call(
  server: Server,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolveCall, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers ?? {} },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => {
          resolveCall({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const minted: { user: string; roles: readonly string[] }[] = [];
let server: Server;
let unbuilt: Server;
let unbuiltDir = '';

beforeAll(async () => {
  const dist = mkdtempSync(join(tmpdir(), 'studio-dist-'));
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>Studio</title>');
  writeFileSync(join(dist, 'assets', 'app-1234.js'), 'console.log(1)');
  const handle = studioHandler({
    distDir: dist,
    localSignIn: {
      tenantId: 'local',
      recentUsers: () => Promise.resolve([{ ownerId: 'alice', lastActiveAt: 1 }]),
      mint: (user, roles) => {
        minted.push({ user, roles });
        return Promise.resolve(`token-for-${user}`);
      },
    },
  });
  server = createServer((req, res) => void handle(req, res));
  unbuiltDir = join(dist, 'nothing-here');
  const missing = studioHandler({ distDir: unbuiltDir });
  unbuilt = createServer((req, res) => void missing(req, res));
  await Promise.all([
    new Promise<void>((r) => server.listen(0, '127.0.0.1', r)),
    new Promise<void>((r) => unbuilt.listen(0, '127.0.0.1', r)),
  ]);
});

afterAll(async () => {
  await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => unbuilt.close(r))]);
});

describe('studioHandler: files', () => {
  it('serves the app with security headers; any other path is the app too (hash routing)', async () => {
    const index = await call(server, '/studio/');
    expect(index.status).toBe(200);
    expect(index.body).toContain('<title>Studio</title>');
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.headers['x-frame-options']).toBe('DENY');
    expect(index.headers['cache-control']).toBe('no-cache');
    expect((await call(server, '/studio/some/deep/path')).body).toContain('<title>Studio</title>');
    const asset = await call(server, '/studio/assets/app-1234.js');
    expect(asset.headers['cache-control']).toContain('immutable');
    expect((await call(server, '/studio')).headers.location).toBe('/studio/');
    expect((await call(server, '/studio/', { method: 'POST' })).status).toBe(405);
  });

  it('says how to build the app when it is not built, and serves it once built', async () => {
    const answer = await call(unbuilt, '/studio/');
    expect(answer.status).toBe(503);
    expect(answer.body).toContain('npm run build:studio');
    // Built later (the server already running): served from the next request on.
    mkdirSync(unbuiltDir);
    writeFileSync(join(unbuiltDir, 'index.html'), '<!doctype html><title>Built later</title>');
    const later = await call(unbuilt, '/studio/');
    expect({ status: later.status, built: later.body.includes('Built later') }).toEqual({
      status: 200,
      built: true,
    });
  });
});

describe('studioHandler: the loopback sign-in', () => {
  const json = { 'content-type': 'application/json' };

  it('lists the recent users and mints a token on loopback', async () => {
    const users = await call(server, '/studio/local/users');
    expect(JSON.parse(users.body)).toEqual({
      tenantId: 'local',
      users: [{ ownerId: 'alice', lastActiveAt: 1 }],
    });
    expect(users.headers['cache-control']).toBe('no-store');
    const token = await call(server, '/studio/local/token', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ user: ' alice ', roles: ['admin'] }),
    });
    expect(JSON.parse(token.body)).toEqual({ token: 'token-for-alice', tenantId: 'local' });
    expect(minted.at(-1)).toEqual({ user: 'alice', roles: ['admin'] });
  });

  it.each([
    ['another host name (DNS rebinding)', { host: 'attacker.example' }],
    ['another origin', { origin: 'http://attacker.example' }],
    ['a cross-site fetch', { 'sec-fetch-site': 'cross-site' }],
  ])('refuses %s', async (_, headers) => {
    const answer = await call(server, '/studio/local/users', { headers });
    expect({
      status: answer.status,
      code: (JSON.parse(answer.body) as { error: { code: string } }).error.code,
    }).toEqual({
      status: 403,
      code: 'LOCAL_SIGNIN_REFUSED',
    });
  });

  it('mints only for a JSON body, and never a role but admin', async () => {
    const before = minted.length;
    const form = await call(server, '/studio/local/token', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"user":"x"}',
    });
    expect(form.status).toBe(415);
    const service = await call(server, '/studio/local/token', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ user: 'x', roles: ['service'] }),
    });
    expect(service.status).toBe(400);
    expect((await call(server, '/studio/local/token')).status).toBe(405);
    expect(minted.length).toBe(before);
  });

  it('is off without a local signer', async () => {
    const answer = await call(unbuilt, '/studio/local/users');
    expect(answer.status).toBe(404);
    expect(answer.body).toContain('LOCAL_SIGNIN_OFF');
  });
});

describe('parseTokenRequest', () => {
  it('checks the user and the roles', () => {
    expect(parseTokenRequest({ user: 'bob' })).toEqual({ user: 'bob', roles: [] });
    expect(parseTokenRequest({ user: '' })).toBe('user: required');
    expect(parseTokenRequest({ user: 'x'.repeat(129) })).toMatch(/at most 128/);
    expect(parseTokenRequest({ user: 'a\u0000b' })).toMatch(/control characters/);
    expect(parseTokenRequest({ user: 'a', roles: ['platform'] })).toMatch(/only "admin"/);
    expect(parseTokenRequest('x')).toBe('expected a JSON object');
  });
});
