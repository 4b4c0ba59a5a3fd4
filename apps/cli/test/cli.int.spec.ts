import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAllInOneServer, loadConfig } from '@engram/all-in-one';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const dataDir = mkdtempSync(join(tmpdir(), 'engram-cli-'));
let addr = '';
let stop: () => Promise<void>;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI as a child process, the way `npm run engram` does. */
function cli(args: readonly string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  return new Promise((resolveRun) => {
    const child = execFile(
      process.execPath,
      ['--conditions=@engram/source', '--import', 'tsx', 'apps/cli/src/main.ts', ...args],
      {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '', ENGRAM_ADDR: addr, ENGRAM_DATA_DIR: dataDir, ...env },
        timeout: 120_000,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolveRun({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input ?? '');
  });
}

/** Runs with --json and parses stdout. */
async function cliJson<T = Record<string, unknown>>(
  args: readonly string[],
  env: Record<string, string> = {},
) {
  const run = await cli(['--json', ...args], env);
  let json: T;
  try {
    json = JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
  return { ...run, json };
}

beforeAll(async () => {
  // No ENGRAM_JWT_SECRET: the server creates <dataDir>/jwt-secret, from which the CLI mints tokens.
  const { server } = await createAllInOneServer(
    loadConfig({ ENGRAM_PORT: '0', ENGRAM_DATA_DIR: dataDir, ENGRAM_LOG_LEVEL: 'silent' }),
    { handleSignals: false },
  );
  addr = server.url;
  stop = () => server.shutdown();
}, 60_000);

afterAll(async () => {
  await stop();
});

describe('engram token', () => {
  it('prints a token the server accepts as its last line, with the requested claims', async () => {
    const run = await cli(['token', '--user', 'alice', '--org', 'acme', '--role', 'admin']);
    expect(run.code).toBe(0);
    const token = run.stdout.trim().split('\n').at(-1)!;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<
      string,
      unknown
    >;
    expect(claims).toMatchObject({ sub: 'alice', tenant: 'local', orgs: ['acme'], roles: ['admin'] });
    const status = await cliJson<{ user: string; index: unknown }>(['status'], { ENGRAM_TOKEN: token });
    expect(status.code).toBe(0);
    expect(status.json.user).toBe('alice');
    expect(status.json.index).not.toBeNull();
  });
});

describe('engram status', () => {
  it('reports every service SERVING and says why the index status is missing without admin', async () => {
    const { code, json } = await cliJson<{
      serving: boolean;
      health: { service: string; status: string }[];
      index: unknown;
      indexNote: string;
      counts: Record<string, number>;
    }>(['status']);
    expect(code).toBe(0);
    expect(json.serving).toBe(true);
    expect(json.health.map((h) => h.service)).toEqual(
      expect.arrayContaining(['engram.governance.v1.GovernanceService', 'engram.context.v1.ContextService']),
    );
    expect(json.index).toBeNull();
    expect(json.indexNote).toContain('admin role');
    const human = await cli(['status']);
    expect(human.stdout).toContain('SERVING');
    expect(human.stdout).toContain('engram.ingestion.v1.IngestionService');
  });
});

describe('engram ingest and search', () => {
  it('ingests Markdown, skips other files with a note, and finds the content', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engram-cli-docs-'));
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'kettle.md'), '# Kettles\n\nThe blue kettle boils water in ninety seconds.\n');
    writeFileSync(join(dir, 'sub', 'picture.png'), 'not really a picture');
    const { code, json } = await cliJson<{
      files: { path: string; status: string; name?: string }[];
      summary: Record<string, number>;
    }>(['ingest', dir]);
    expect(code).toBe(0);
    expect(json.summary).toMatchObject({ ingested: 1, skipped: 1, failed: 0 });
    expect(json.files.find((f) => f.path.endsWith('kettle.md'))?.name).toMatch(/^documents\//);

    const again = await cli(['ingest', join(dir, 'kettle.md')]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/kettle\.md → documents\/\S+ \(already ingested/);

    const search = await cliJson<{ results: { kind: string; breakdown?: unknown }[] }>([
      'search',
      'blue kettle',
      '--explain',
      '--kind',
      'chunk',
    ]);
    expect(search.code).toBe(0);
    expect(search.json.results[0]).toMatchObject({ kind: 'ITEM_KIND_CHUNK' });
    expect(search.json.results[0]?.breakdown).toBeDefined();
    const human = await cli(['search', 'blue kettle', '--explain']);
    expect(human.stdout).toContain('kettle.md');
    expect(human.stdout).toContain('fused');
  });
});

describe('engram append and context', () => {
  it('creates a session, appends both roles, and shows the assembled context with its trace', async () => {
    const first = await cliJson<{ session: string; created: boolean }>([
      'append',
      '--session',
      'new',
      'Where do I keep the blue kettle?',
    ]);
    expect(first.code).toBe(0);
    expect(first.json.created).toBe(true);
    const session = first.json.session;
    const second = await cli(['append', '--session', session, '--role', 'assistant', 'In the kitchen.']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('(assistant, sequence 2');

    const context = await cliJson<{ messages: { content: string }[]; trace: { layer: string }[] }>([
      'context',
      '--session',
      session,
      'and what does it do?',
      '--budget',
      '2000',
    ]);
    expect(context.code).toBe(0);
    expect(context.json.messages.at(-1)?.content).toBe('and what does it do?');
    expect(context.json.trace.map((t) => t.layer)).toContain('CONTEXT_LAYER_RECENT_TURNS');
    const human = await cli(['context', '--session', session, 'and what does it do?']);
    expect(human.stdout).toMatch(/layer\s.*item\s.*tokens\s.*score\s.*reason/);
    expect(human.stdout).toContain('RECENT_TURNS');

    const sessions = await cliJson<{ sessions: { name: string }[] }>(['sessions']);
    expect(sessions.json.sessions.map((s) => s.name)).toContain(session);
  });
});

describe('engram remember and memories', () => {
  it('accepts a stated preference and shows, traces and deletes it', async () => {
    const run = await cliJson<{
      extractionJob: { decisions: { outcome: string; rule: string; memory?: { name: string } }[] };
    }>(['remember', 'From now on please answer more concisely.']);
    expect(run.code).toBe(0);
    const accepted = run.json.extractionJob.decisions.find((d) => d.outcome === 'DECISION_OUTCOME_ACCEPTED');
    expect(accepted?.memory?.name).toMatch(/^memories\//);
    const name = accepted!.memory!.name;

    const list = await cli(['memories', 'list']);
    expect(list.stdout).toContain(name);
    expect(list.stdout).toContain('answer_style');
    const show = await cli(['memories', 'show', name]);
    expect(show.stdout).toMatch(/status:\s+ACTIVE/);
    const deleted = await cli(['memories', 'delete', name]);
    expect(deleted.code).toBe(0);
    const history = await cliJson<{ revisions: { action: string }[] }>(['memories', 'history', name]);
    expect(history.json.revisions.map((r) => r.action)).toEqual([
      'REVISION_ACTION_CREATE',
      'REVISION_ACTION_DELETE',
    ]);
  });

  it('shows that a secret in the text was redacted before anything was stored', async () => {
    const run = await cliJson<{ redacted: boolean; storedContent: string }>([
      'remember',
      'my password is hunter2.',
    ]);
    expect(run.code).toBe(0);
    expect(run.json.redacted).toBe(true);
    expect(run.json.storedContent).not.toContain('hunter2');
    const human = await cli(['remember', 'my password is hunter2.']);
    expect(human.stdout).toContain('redacted a secret');
    expect(human.stdout).not.toContain('hunter2');
  });

  it('refuses a review without the admin role (exit 1 with the reason)', async () => {
    const run = await cli(['memories', 'review', 'memories/01M8N89N9JX51NEQ6GFKG8A4Z2', '--approve']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('ROLE_REQUIRED');
  });
});

describe('engram chat', () => {
  it('without a model prints what to configure and exits 1', async () => {
    const run = await cli(['chat'], {}, 'hello\n');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('MODEL_NOT_CONFIGURED');
    expect(run.stderr).toContain('ENGRAM_LLM_MODEL');
  });
});

describe('failures', () => {
  it('exit 3 with a one-line hint when no server is running', async () => {
    const run = await cli(['sessions'], { ENGRAM_ADDR: 'http://127.0.0.1:1' });
    expect(run.code).toBe(3);
    expect(run.stderr.trim()).toBe(
      'engram: no Engram server at http://127.0.0.1:1; start one with `npm start`',
    );
  });

  it('exit 4 when the token is rejected', async () => {
    const run = await cliJson<{ error: { reason: string } }>(['sessions'], {
      ENGRAM_TOKEN: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl',
    });
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('token rejected');
    expect(run.json.error.reason).toBe('TOKEN_SIGNATURE_INVALID');
  });

  it('exit 2 on usage errors', async () => {
    expect((await cli(['bogus'])).code).toBe(2);
    expect((await cli(['search'])).code).toBe(2);
    expect((await cli(['search', 'x', '--top-k', 'zero'])).code).toBe(2);
    const help = await cli(['help', 'search']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--explain');
  });
});

describe('engram forget-user', () => {
  it('needs --yes, then erases the user and prints the receipt', async () => {
    const refused = await cli(['--user', 'forgettable', 'forget-user']);
    expect(refused.code).toBe(2);
    await cli(['--user', 'forgettable', 'append', '--session', 'new', 'something to forget']);
    const { code, json } = await cliJson<{
      forgetReceipt: { subject: string; counts: Record<string, string> };
    }>(['--user', 'forgettable', 'forget-user', '--yes']);
    expect(code).toBe(0);
    expect(json.forgetReceipt.subject).toBe('forgettable');
    expect(json.forgetReceipt.counts['sessions']).toBe('1');
    const after = await cliJson<{ sessions: unknown[] }>(['--user', 'forgettable', 'sessions']);
    expect(after.json.sessions).toEqual([]);
  });
});

describe('engram export and engram import', () => {
  const user = `porter-${String(Date.now())}`;

  it('exports to stdout (engram export > me.jsonl) and to a file, and re-importing changes nothing', async () => {
    const remembered = await cli(['--user', user, 'remember', 'My bicycle is a green Brompton']);
    expect(remembered.code).toBe(0);
    const toStdout = await cli(['--user', user, 'export']);
    expect(toStdout.code).toBe(0);
    const lines = toStdout.stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ kind: 'header', format: 'engram.export', version: 1 });
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ kind: 'trailer' });
    expect(toStdout.stdout).toContain('green Brompton');
    expect(toStdout.stderr).toMatch(/exported \d+ records/);

    const file = join(dataDir, 'me.jsonl');
    const toFile = await cliJson<{ lines: number; records: number }>(['--user', user, 'export', '-o', file]);
    expect(toFile.code).toBe(0);
    expect(toFile.json.lines).toBe(lines.length);

    const again = await cliJson<{
      created: Record<string, number>;
      unchanged: Record<string, number>;
      records: number;
    }>(['--user', user, 'import', file]);
    expect(again.code).toBe(0);
    expect(Object.values(again.json.created).every((n) => n === 0)).toBe(true);
    expect(again.json.records).toBe(lines.length - 2);
    expect(Object.values(again.json.unchanged).reduce((a, b) => a + b, 0)).toBe(again.json.records);
  });

  it('imports a mem0 export from stdin, checks it first with --validate-only, and refuses a damaged file', async () => {
    const mem0 = JSON.stringify({
      results: [
        { id: 'm-1', memory: 'Prefers window seats', user_id: 'x', created_at: '2025-01-02T03:04:05Z' },
      ],
    });
    const checked = await cli(
      ['--user', `${user}-b`, 'import', '--from', 'mem0', '--validate-only', '-'],
      {},
      mem0,
    );
    expect(checked.code).toBe(0);
    expect(checked.stdout).toMatch(/would create:\s+memory 1, memory_revision 1/);
    expect(checked.stdout).toContain('nothing was written');
    const imported = await cli(['--user', `${user}-b`, 'import', '--from', 'mem0', '-'], {}, mem0);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/created:\s+memory 1, memory_revision 1/);
    const listed = await cli(['--user', `${user}-b`, 'memories', 'list']);
    expect(listed.stdout).toContain('Prefers window seats');

    const damaged = join(dataDir, 'damaged.jsonl');
    const exported = (await cli(['--user', user, 'export'])).stdout.replace('green Brompton', 'red Brompton');
    writeFileSync(damaged, exported);
    const refused = await cli(['--user', `${user}-c`, 'import', damaged]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('IMPORT_CHECKSUM_MISMATCH');

    const notMem0 = await cli(['--user', `${user}-c`, 'import', '--from', 'mem0', '-'], {}, '{"nope": 1}');
    expect(notMem0.code).toBe(2);
    expect(notMem0.stderr).toContain('not a mem0 export');
  });
});
