// The container image and the compose stack, checked by reading them (no Docker engine here): the
// Dockerfile's invariants, the entry point's behaviour, .dockerignore and deploy/compose.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions, with continuation lines joined and comments dropped. */
function instructions(text: string): Instruction[] {
  const lines = text.split('\n').filter((l) => !/^\s*#/.test(l));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const [, op = '', rest = ''] = /^(\S+)\s*(.*)$/s.exec(l) ?? [];
      return { op: op.toUpperCase(), args: rest };
    });
}

/** The stages of a Dockerfile: name and instructions, in order. */
function stages(all: Instruction[]): { name: string; from: string; body: Instruction[] }[] {
  const out: { name: string; from: string; body: Instruction[] }[] = [];
  for (const i of all) {
    if (i.op === 'FROM') {
      const [from = '', as, name] = i.args.split(/\s+/);
      out.push({
        name: as?.toUpperCase() === 'AS' && name !== undefined ? name : String(out.length),
        from,
        body: [],
      });
    } else {
      out.at(-1)?.body.push(i);
    }
  }
  return out;
}

const dockerfile = instructions(read('deploy/docker/Dockerfile'));
const stageList = stages(dockerfile);
const runtime = stageList.at(-1)!;
const args = Object.fromEntries(
  dockerfile
    .filter((i) => i.op === 'ARG' && i.args.includes('='))
    .map((i) => [i.args.slice(0, i.args.indexOf('=')), i.args.slice(i.args.indexOf('=') + 1)]),
);
const PINNED_IMAGE = /^[\w./-]+:\d+\.\d+\.\d+[\w.-]*@sha256:[0-9a-f]{64}$/;

/** The pinned sha256 of the ONNX weights, from scripts/fetch-model.mjs (which TOOLCHAIN.md pins). */
const ONNX_SHA256 = /'onnx\/model_quantized\.onnx': '([0-9a-f]{64})'/.exec(
  read('scripts/fetch-model.mjs'),
)?.[1];

describe('deploy/docker/Dockerfile', () => {
  it('is multi-stage and every stage starts from a base pinned by version tag and digest', () => {
    expect(stageList.length).toBeGreaterThanOrEqual(3);
    expect(args['NODE_IMAGE']).toMatch(PINNED_IMAGE);
    expect(args['NODE_IMAGE']).toMatch(/^node:\d+\.\d+\.\d+-\w+-slim@/); // a Node slim image
    for (const stage of stageList) {
      const from = stage.from.replace(/^\$\{(\w+)\}$/, (_m, name: string) => args[name] ?? '');
      expect({ stage: stage.name, from }).toEqual({
        stage: stage.name,
        from: expect.stringMatching(PINNED_IMAGE),
      });
    }
  });

  it('runs the final stage as a non-root numeric user, stops with SIGTERM and starts the entry point', () => {
    const users = runtime.body.filter((i) => i.op === 'USER');
    expect(users).toHaveLength(1);
    const [uid = '', gid = ''] = users[0]!.args.split(':');
    expect(Number(uid)).toBeGreaterThan(0);
    expect(Number(gid)).toBeGreaterThan(0);
    // Nothing after USER switches back.
    const afterUser = runtime.body.slice(runtime.body.indexOf(users[0]!) + 1);
    expect(afterUser.map((i) => i.op)).not.toContain('RUN');
    expect(dockerfile.filter((i) => i.op === 'STOPSIGNAL').map((i) => i.args)).toEqual(['SIGTERM']);
    expect(runtime.body.find((i) => i.op === 'ENTRYPOINT')?.args).toBe(
      '["node", "/app/deploy/docker/entrypoint.mjs"]',
    );
    expect(dockerfile.map((i) => i.op)).not.toContain('HEALTHCHECK'); // probes are gRPC, in Kubernetes
    expect(
      runtime.body
        .filter((i) => i.op === 'ENV')
        .map((i) => i.args)
        .join(' '),
    ).toContain('ENGRAM_HOST=0.0.0.0');
  });

  it('ships production dependencies and compiled code only', () => {
    const build = stageList.find((s) => s.name === 'build')!;
    const runs = build.body.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs.some((r) => /nx run-many -t build/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm prune --omit=dev\b/.test(r))).toBe(true);
    // The runtime stage installs nothing and copies only the staged tree and the verification.
    expect(runtime.body.filter((i) => i.op === 'RUN')).toEqual([]);
    const copies = runtime.body.filter((i) => i.op === 'COPY').map((i) => i.args);
    expect(copies).toEqual([
      expect.stringMatching(/^--from=build .*\/out\/ \/app\/$/),
      expect.stringMatching(/^--from=model-check /),
    ]);
  });

  it('copies the manifest of every workspace package before `npm ci`', () => {
    const build = stageList.find((s) => s.name === 'build')!;
    const ci = build.body.findIndex((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args));
    const copied = build.body
      .slice(0, ci)
      .filter((i) => i.op === 'COPY')
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    const workspaces = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces;
    for (const glob of workspaces) {
      if (!glob.endsWith('/*')) {
        expect(copied).toContain(`${glob}/package.json`);
        continue;
      }
      const parent = glob.replace(/\/\*$/, '');
      for (const entry of readdirSync(join(root, parent))) {
        if (existsSync(join(root, parent, entry, 'package.json'))) {
          expect(copied).toContain(`${parent}/${entry}/package.json`);
        }
      }
    }
    expect(copied).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', '.npmrc']));
  });

  it('bakes the embedding model in and verifies it against the pinned sha256', () => {
    expect(ONNX_SHA256).toBe('15b717c382bcb518ba457b93ea6850ede7f4f1cd8937454aa06972366cd19bcc');
    const check = stageList.find((s) => s.name === 'model-check');
    const runs =
      check?.body
        .filter((i) => i.op === 'RUN')
        .map((i) => i.args)
        .join(' ') ?? '';
    expect(runs).toContain(`${ONNX_SHA256!}  .models/BAAI/bge-small-zh-v1.5/onnx/model_quantized.onnx`);
    expect(runs).toContain('sha256sum -c');
    expect(runs).toContain('node scripts/fetch-model.mjs'); // checks every file of the model
    expect(runs).toContain("grep -q 'present and verified'");
    // The runtime depends on the check stage, so the image cannot be built if it fails.
    expect(runtime.body.some((i) => i.op === 'COPY' && i.args.startsWith('--from=model-check'))).toBe(true);
    expect(runtime.body.find((i) => i.op === 'ENV')?.args).toContain('ENGRAM_MODEL_DIR=/app/.models');
  });
});

describe('deploy/docker/entrypoint.mjs', () => {
  const entrypoint = join(root, 'deploy', 'docker', 'entrypoint.mjs');
  const run = (argv: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [entrypoint, ...argv], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });

  it('maps every ENGRAM_SERVICE to a compiled main whose source exists', async () => {
    const path = entrypoint;
    const mod = (await import(path)) as {
      ENTRY_POINTS: Record<string, string>;
      selectEntry: (
        argv: string[],
        env: Record<string, string>,
      ) => { service: string; entry: string } | { error: string };
    };
    expect(Object.keys(mod.ENTRY_POINTS).sort()).toEqual(
      [
        'all-in-one',
        'context',
        'governance',
        'ingestion',
        'migrate',
        'retrieval',
        'wait-for-migrations',
      ].sort(),
    );
    for (const [service, entry] of Object.entries(mod.ENTRY_POINTS)) {
      const source = entry.endsWith('.mjs')
        ? entry
        : entry.replace('/dist/', '/src/').replace(/\.js$/, '.ts');
      expect({ service, source, exists: existsSync(join(root, source)) }).toEqual({
        service,
        source,
        exists: true,
      });
    }
    expect(mod.ENTRY_POINTS['migrate']).toBe('libs/store/dist/migrate-cli.js'); // what `npm run migrate` runs
    expect(mod.selectEntry(['retrieval'], { ENGRAM_SERVICE: 'context' })).toEqual({
      service: 'retrieval',
      entry: 'services/retrieval/dist/main.js',
    });
    expect(mod.selectEntry([], { ENGRAM_SERVICE: 'context' })).toMatchObject({ service: 'context' });
  });

  it('refuses a missing or unknown service, and a missing build', () => {
    const none = run([]);
    expect(none.status).toBe(64);
    expect(none.stderr).toContain('no service chosen');
    const unknown = run([], { ENGRAM_SERVICE: 'gateway' });
    expect(unknown.status).toBe(64);
    expect(unknown.stderr).toContain('unknown service "gateway"');
    const missing = run(['governance'], { ENGRAM_APP_ROOT: join(root, 'deploy', 'no-such-root') });
    expect(missing.status).toBe(66);
    expect(missing.stderr).toContain('services/governance/dist/main.js is missing');
  });
});

describe('.dockerignore', () => {
  it('keeps dependencies, build outputs, the model, local state and secrets out of the build context', () => {
    const patterns = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(patterns).toEqual(
      expect.arrayContaining(['**/node_modules', '**/dist', '.models', '.engram', '.git', '.env', '**/.env']),
    );
    // Nothing the build needs is excluded.
    for (const needed of ['scripts', 'libs', 'services', 'proto', 'deploy/docker', 'package-lock.json']) {
      expect(patterns).not.toContain(needed);
    }
  });
});

describe('deploy/compose', () => {
  const compose = parse(read('deploy/compose/compose.yaml'), { merge: true }) as {
    services: Record<
      string,
      {
        image: string;
        command?: string[];
        environment?: Record<string, string>;
        ports?: string[];
        depends_on?: Record<string, { condition: string }>;
        user?: string;
        read_only?: boolean;
        cap_drop?: string[];
        stop_signal?: string;
      }
    >;
  };
  const SERVICES = { governance: 50061, ingestion: 50062, retrieval: 50063, context: 50064 } as const;

  it('runs MySQL 8 and Qdrant from official images pinned by version and digest', () => {
    expect(compose.services['mysql']?.image).toMatch(/^mysql:8\.\d+\.\d+@sha256:[0-9a-f]{64}$/);
    expect(compose.services['qdrant']?.image).toMatch(/^qdrant\/qdrant:v\d+\.\d+\.\d+@sha256:[0-9a-f]{64}$/);
  });

  it('runs the four services and the migration from the one image, after the migration', () => {
    for (const [name, port] of Object.entries(SERVICES)) {
      const s = compose.services[name]!;
      expect(s.image).toBe('engram:local');
      expect(s.command).toEqual([name]);
      expect(s.environment?.['ENGRAM_PORT']).toBe(String(port));
      expect(s.ports).toEqual([`127.0.0.1:${port}:${port}`]);
      expect(s.depends_on?.['migrate']).toEqual({ condition: 'service_completed_successfully' });
      expect(s).toMatchObject({
        user: '1000:1000',
        read_only: true,
        cap_drop: ['ALL'],
        stop_signal: 'SIGTERM',
      });
      for (const [other, otherPort] of Object.entries(SERVICES)) {
        expect(s.environment?.[`ENGRAM_${other.toUpperCase()}_URL`]).toBe(`http://${other}:${otherPort}`);
      }
    }
    expect(compose.services['retrieval']?.environment?.['QDRANT_URL']).toBe('http://qdrant:6333');
    expect(compose.services['migrate']?.command).toEqual(['migrate']);
    expect(compose.services['migrate']?.depends_on?.['mysql']).toEqual({ condition: 'service_healthy' });
  });

  it('takes every secret from the untracked .env file, all of them listed in .env.example', () => {
    const text = read('deploy/compose/compose.yaml');
    const example = read('deploy/compose/.env.example');
    const exampleVars = new Set([...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]));
    const used = new Set([...text.matchAll(/\$\{([A-Z_]+)(?::?[-?][^}]*)?\}/g)].map((m) => m[1]));
    expect([...used].filter((v) => !exampleVars.has(v))).toEqual([]);
    // .env.example holds no values for secrets.
    for (const m of example.matchAll(/^([A-Z_]*(?:SECRET|PASSWORD|KEY)[A-Z_]*)=(.*)$/gm))
      expect(m[2]).toBe('');
    for (const s of Object.values(compose.services)) {
      for (const [name, value] of Object.entries(s.environment ?? {})) {
        if (/SECRET|PASSWORD|API_KEY/.test(name)) expect(value).toMatch(/^\$\{[A-Z_]+(:[-?].*)?\}$/);
      }
    }
    // The real .env is ignored by git.
    expect(read('.gitignore').split('\n')).toContain('.env');
  });
});
