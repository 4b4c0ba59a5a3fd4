import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** A port nothing listens on, so the demo cannot reuse a developer's running server. */
function unusedPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolvePort(port);
      });
    });
  });
}

function runDemo(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--conditions=@engram/source', '--import', 'tsx', 'apps/cli/src/demo.ts'],
    { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
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

function between(text: string, from: string, to: string): string {
  const start = text.indexOf(from);
  const end = text.indexOf(to, start);
  expect({ start: start >= 0, end: end > start }).toEqual({ start: true, end: true });
  return text.slice(start, end);
}

describe('npm run demo', () => {
  it('starts its own server, then shows governed memories, an explained search and a traced context', async () => {
    // Nothing from the developer's shell that would point the demo at another server or user.
    const unset = new Set(['ENGRAM_TOKEN', 'ENGRAM_USER', 'ENGRAM_JWT_SECRET', 'ENGRAM_DATA_DIR']);
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !unset.has(name)),
    );
    env['ENGRAM_ADDR'] = `http://127.0.0.1:${String(await unusedPort())}`;

    const { code, stdout, stderr } = await runDemo(env);

    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('starting one');
    for (const heading of [
      '1. Ingest a Markdown document',
      '2. Append a bilingual conversation',
      '3. Memories extracted, with the governance decision',
      '4. Hybrid search with explanations',
      '5. Assembled context for the next turn',
    ])
      expect(stdout).toContain(heading);

    // The conversation was closed into MemCells per calendar day, and extraction accepted memories.
    expect(stdout).toMatch(/DATE_CHANGE\s+EXTRACTED/);
    expect(stdout).toMatch(/ACCEPTED\s+FACT\s+user_preference\/answer_style/);
    // The pasted key was redacted on ingestion and rejected as a memory; it is printed nowhere.
    expect(stdout).toContain('[redacted:api_key]');
    expect(stdout).toMatch(/REJECTED by rule secret_denial/);
    expect(stdout).not.toContain('sk-DEMO4engram7notReal2026TrekXyz');
    // The engram CLI ran where the demo shows it (it falls back to the API, saying so, otherwise).
    expect(stdout).toContain('$ engram search --explain');
    expect(stdout).toContain('$ engram context --session sessions/');
    expect(stdout).not.toContain('engram CLI failed');
    // Search results come with their score breakdown.
    const search = between(stdout, '4. Hybrid search', '5. Assembled context');
    for (const part of [/fused/i, /recency/i, /mmr/i, /CHUNK/, /MEMORY/, /\b[01]\.\d{3}\b/])
      expect(search).toMatch(part);
    // The context has its layers (the evergreen facts among them) and a trace ending with the message.
    const context = between(stdout, '5. Assembled context', 'Demo complete');
    expect(context).toMatch(/EVERGREEN_FACTS\W+OK/);
    expect(context).toMatch(/RECENT_TURNS\W+OK/);
    expect(context).toMatch(/USER_MESSAGE\b.*\bINCLUDED/);
    // Facts are quoted data (decision 0025).
    expect(context).toContain('- "偏好简洁的回答');
    expect(stdout).toContain('Demo complete');
    expect(stdout).toContain('Stopping the demo server');
  }, 600_000);
});
