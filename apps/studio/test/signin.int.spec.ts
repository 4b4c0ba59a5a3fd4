import { request } from 'node:http';
import { describe, expect, it } from '@jest/globals';
import { MemoryType } from '@engram/contracts/governance';
import { clientsAs, localToken, openStudio, screenshot, signInAs, useStudio } from './harness.js';

const studio = useStudio();

/** A raw HTTP/1.1 GET with a chosen Host header (fetch does not let a caller set it). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolveGet, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        resolveGet({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Studio sign-in', () => {
  it('signs in through the local picker, keeps the token for the tab only, and signs out', async () => {
    const { page, problems } = await openStudio(studio().browser, studio().server);
    await page.getByRole('heading', { name: 'Sign in to Engram Studio' }).waitFor();
    await screenshot(page, 'sign-in');
    await signInAs(page, 'studio-alice');
    expect(await page.locator('[data-testid="who"]').textContent()).toContain('tenant local');
    // The token is in session storage, never in the URL or local storage.
    expect(page.url()).not.toMatch(/eyJ/);
    const stored = await page.evaluate(() => ({
      session: sessionStorage.getItem('engram.studio.token'),
      local: Object.keys(localStorage).filter((k) => localStorage.getItem(k)?.startsWith('eyJ')),
    }));
    expect(stored.session).toMatch(/^eyJ/);
    expect(stored.local).toEqual([]);
    await page.reload();
    await page.locator('[data-testid="who"]').filter({ hasText: 'studio-alice' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Engram Studio' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('engram.studio.token'))).toBeNull();
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("shows the next user nothing of the previous one's, and loads the new user's views at once", async () => {
    const { server } = studio();
    const text = 'Studio-Ann keeps her bicycle in the blue shed.';
    await clientsAs(server, await localToken(server, 'studio-ann')).governance.createMemory({
      memory: { type: MemoryType.EVENT, text },
    });
    const { page, problems } = await openStudio(studio().browser, server);
    await signInAs(page, 'studio-ann');
    // The default view (no hash) lists the memories of whoever just signed in.
    await page.locator('main').getByText(text).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signInAs(page, 'studio-ben');
    await page.locator('main .empty').first().waitFor();
    expect(await page.locator('main').getByText(text).count()).toBe(0);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('switches to Chinese and back', async () => {
    const { page } = await openStudio(studio().browser, studio().server);
    await signInAs(page, 'studio-zh');
    await page.locator('header.topbar select').selectOption('zh');
    await page.locator('nav a[data-view="memories"]').filter({ hasText: '记忆' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('zh-CN');
    await page.locator('header.topbar select').selectOption('en');
    await page.locator('nav a[data-view="memories"]').filter({ hasText: 'Memories' }).waitFor();
    await page.context().close();
  });

  it('refuses a pasted text that is not a JWT, and shows the reason when the server refuses a token', async () => {
    const { page } = await openStudio(studio().browser, studio().server);
    await page.locator('textarea[name="token"]').fill('not a token');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('alert').filter({ hasText: 'not a JWT' }).waitFor();
    // Well-formed but signed with another key: the services refuse it, and the view says why.
    const forged = [
      Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url'),
      Buffer.from('{"sub":"mallory","tenant":"local"}').toString('base64url'),
      Buffer.from('not-the-signature').toString('base64url'),
    ].join('.');
    await page.locator('textarea[name="token"]').fill(forged);
    await page.getByRole('button', { name: 'Use token' }).click();
    const alert = page.locator('main [role="alert"]').first();
    await alert.waitFor();
    expect(await alert.getAttribute('data-reason')).toBe('TOKEN_SIGNATURE_INVALID');
    await page.context().close();
  });

  it('offers the local sign-in to loopback hosts only', async () => {
    const ok = await getWithHost(
      `${studio().server.url}/studio/local/users`,
      new URL(studio().server.url).host,
    );
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ tenantId: 'local' });
    const rebound = await getWithHost(`${studio().server.url}/studio/local/users`, 'attacker.example:80');
    expect({
      status: rebound.status,
      code: (JSON.parse(rebound.body) as { error: { code: string } }).error.code,
    }).toEqual({
      status: 403,
      code: 'LOCAL_SIGNIN_REFUSED',
    });
    const crossSite = await fetch(`${studio().server.url}/studio/local/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://attacker.example' },
      body: JSON.stringify({ user: 'victim' }),
    });
    expect(crossSite.status).toBe(403);
    const service = await fetch(`${studio().server.url}/studio/local/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'x', roles: ['service'] }),
    });
    expect(service.status).toBe(400);
  });
});
