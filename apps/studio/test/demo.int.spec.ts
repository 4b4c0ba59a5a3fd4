import { spawn } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';
import { MemoryStatus } from '@engram/contracts/governance';
import { cleanEnv, clientsAs, localToken, openStudio, repoRoot, screenshot, useStudio } from './harness.js';

const studio = useStudio();

/** `npm run demo` against the running server (its own data directory, so the same local secret). */
function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['run', '-s', 'demo'], {
    cwd: repoRoot,
    env: cleanEnv({ ENGRAM_ADDR: studio().server.url, ENGRAM_DATA_DIR: studio().server.dataDir }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolveRun) =>
    child.on('close', (code) => {
      resolveRun({ code, stdout, stderr });
    }),
  );
}

describe('npm start, npm run demo, then /studio', () => {
  it("lists the demo user in the local picker and shows the demo user's memories", async () => {
    const demo = await runDemo();
    expect({ code: demo.code, stderr: demo.code === 0 ? '' : demo.stderr }).toEqual({ code: 0, stderr: '' });
    expect(demo.stdout).toContain(`using the one serving at ${studio().server.url}`);
    const user = /User:\s+(demo-\d+)/.exec(demo.stdout)?.[1];
    expect(user).toBeDefined();
    const { memories } = await clientsAs(
      studio().server,
      await localToken(studio().server, user!),
    ).governance.listMemories({
      statuses: [MemoryStatus.ACTIVE],
      pageSize: 100,
    });
    expect(memories.length).toBeGreaterThan(3);

    const { page, problems } = await openStudio(studio().browser, studio().server);
    // The demo's fresh user is the newest of the local tenant: first in the picker.
    const pick = page.locator(`button[data-user="${user!}"]`);
    await pick.waitFor();
    expect(await page.locator('button[data-user]').first().getAttribute('data-user')).toBe(user);
    await pick.click();
    await page.locator('[data-testid="who"]').filter({ hasText: user! }).waitFor();
    const main = page.locator('main');
    for (const memory of memories) {
      await main.getByText(memory.text.slice(0, 40), { exact: false }).first().waitFor();
    }
    await screenshot(page, 'demo-memories');
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
