/**
 * The published TypeScript SDK, as a user gets it: `npm pack` of clients/typescript installed into
 * a fresh temporary project (no workspace, no tsx, no @engram/source condition), then a plain
 * `.mjs` script run with `node` against a real all-in-one server over the Connect, gRPC-Web and
 * gRPC transports, and a `.ts` consumer type-checked against the installed declarations. Chat
 * streams from the scripted OpenAI-compatible upstream (the one allowed fake).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../../../libs/llm/test/scripted-openai.js';
import {
  explainRun,
  newSecret,
  repoRoot,
  runCommand,
  startServer,
  tempDir,
  tokenFor,
  type CommandRun,
  type TestServer,
} from './harness.js';

const SDK_DIR = join(repoRoot, 'clients/typescript');
const CHAT_REPLY = 'Hello from the scripted model, streamed in pieces.';
const PROTOCOLS = ['connect', 'grpc-web', 'grpc'] as const;

/** Runs a command to its end with this process's environment (see `runCommand`). */
const run = (file: string, args: string[], cwd: string, env: Record<string, string>, timeoutMs: number) =>
  runCommand(file, args, { env, timeoutMs, cwd, inherit: true });

/** Throws with the command's output unless it exited with 0. */
function expectSuccess(what: string, result: CommandRun): void {
  if (result.code !== 0) throw new Error(explainRun(what, result));
}

// The consumer's script: every call goes through the installed package only.
const SMOKE = String.raw`
import { createReadStream, writeFileSync } from 'node:fs';
import { Code, EngramError, IngestPhase, MemoryType, MessageRole, Paginated } from '@engram/client';

const protocol = process.env.PROTOCOL;
const { Engram } = await import(protocol === 'grpc' ? '@engram/client/node' : '@engram/client');
const baseUrl = process.env.ENGRAM_URL;
let tokenCalls = 0;
const engram = new Engram({
  baseUrl,
  transport: protocol,
  tokenProvider: async () => {
    tokenCalls++;
    return process.env.ENGRAM_TOKEN;
  },
  timeoutMs: 30_000,
});
const stranger = new Engram({ baseUrl, transport: protocol, token: process.env.OTHER_TOKEN });
const summary = { protocol };
const check = (condition, what) => {
  if (!condition) throw new Error('check failed: ' + what);
};
const tag = protocol.replace('-', '');

const session = await engram.sessions.create({ displayName: 'sdk smoke ' + protocol });
summary.session = session.name;
const appended = await engram.sessions.append(session.name, [
  { role: MessageRole.USER, content: 'We are planning a trip to Lisbon in May.' },
  { role: MessageRole.ASSISTANT, content: 'Lisbon in May is lovely: mild and sunny.' },
  { role: MessageRole.USER, content: 'Remember that I like the tram lines.' },
]);
summary.messagesAppended = appended.messages.length;
const listed = [];
for await (const message of engram.sessions.messages(session.name, { pageSize: 2 })) listed.push(message.content);
summary.messagesListed = listed.length;

const fruit = 'quince' + tag;
const created = [];
for (const [i, word] of [fruit, 'tea' + tag, 'jazz' + tag, 'chess' + tag, 'rain' + tag].entries()) {
  const { memory } = await engram.memories.create({
    memory: { type: MemoryType.FACT, namespace: 'user_preference', key: 'likes_' + i, value: { item: word }, text: 'Ann likes ' + word + '.' },
  });
  created.push(memory.name);
}
summary.memoriesCreated = created.length;
const list = engram.memories.list({ pageSize: 2 });
check(list instanceof Paginated, 'list() returns a Paginated');
const names = [];
for await (const memory of list) names.push(memory.name);
let pages = 0;
for await (const page of list.pages()) pages++;
summary.memoriesListed = names.length;
summary.memoryPages = pages;
summary.listedAllCreated = created.every((name) => names.includes(name));
const first = await list.page();
summary.firstPageSize = first.items.length;
summary.firstPageHasNext = first.nextPageToken !== '';

// The index is eventually consistent: poll until the memory is searchable.
let found;
for (let i = 0; i < 60 && found === undefined; i++) {
  const { results } = await engram.search({ query: 'Ann likes ' + fruit, topK: 10 });
  found = results.find((r) => r.name === created[0]);
  if (found === undefined) await new Promise((r) => setTimeout(r, 250));
}
summary.searchFoundMemory = found !== undefined;

const built = await engram.context.build({
  session: session.name,
  userMessage: 'What do I like in Lisbon?',
  budget: { totalTokens: 2000 },
});
summary.contextMessages = built.messages.length;
summary.contextLastIsQuestion = built.messages.at(-1)?.content.includes('What do I like in Lisbon?') === true;
summary.contextTokens = built.totalTokens;
summary.budgetTokens = built.budgetTokens;

const docPath = process.env.DOC_PATH;
const phases = [];
const ingested = await engram.documents.ingest(protocol === 'grpc' ? createReadStream(docPath, { highWaterMark: 64 }) : new TextEncoder().encode(process.env.DOC_TEXT), {
  document: { mimeType: 'text/markdown', displayName: 'tram-' + tag + '.md' },
  waitForIndex: true,
  partBytes: 100,
  onProgress: (progress) => phases.push(IngestPhase[progress.phase]),
});
summary.document = ingested.document.name;
summary.chunksWritten = ingested.chunksWritten;
summary.progressPhases = [...new Set(phases)];
const chunks = [];
for await (const chunk of engram.documents.chunks(ingested.document.name, { pageSize: 1 })) chunks.push(chunk.name);
summary.chunksListed = chunks.length;

const failure = async (promise) => {
  try {
    await promise;
  } catch (error) {
    check(error instanceof EngramError, 'throws EngramError, got ' + String(error));
    return { code: error.code, codeName: error.codeName, reason: error.reason, metadata: error.metadata, requestId: error.requestId };
  }
  throw new Error('expected a failure');
};
summary.strangerGet = await failure(stranger.memories.get(created[0]));
summary.invalidList = await failure(engram.memories.list({ pageSize: -1 }).page());
summary.unauthenticated = await failure(new Engram({ baseUrl, transport: protocol }).sessions.get(session.name));
summary.codeNotFound = Code.NotFound;

let text = '';
for await (const delta of engram.chat({ session: session.name, userMessage: 'Say hello.', budget: { totalTokens: 2000 } })) text += delta.text;
summary.chatText = text;
summary.rawSession = (await engram.raw.ingestion.getSession({ name: session.name })).session.name;

const exported = [];
for await (const line of engram.portability.export()) exported.push(line);
summary.exportHeader = JSON.parse(exported[0]).format;
summary.exportTrailerRecords = JSON.parse(exported.at(-1)).records;
summary.exportLines = exported.length;
if (protocol === 'grpc') {
  const again = await engram.portability.import(exported);
  summary.reimportCreated = Object.values(again.created).reduce((a, b) => a + Number(b), 0);
  summary.reimportUnchanged = Object.values(again.unchanged).reduce((a, b) => a + Number(b), 0);
} else {
  summary.importOverFetch = await failure(engram.portability.import(exported));
}
summary.tokenCalls = tokenCalls;
console.log('sdk_smoke: OK ' + JSON.stringify(summary));
`;

// The consumer's TypeScript: the published declarations must type real code (and reject wrong code).
const CONSUMER_TS = `
import { Code, Engram, EngramError, MemoryType, type Memory, type Page, governance } from '@engram/client';
import { Engram as NodeEngram } from '@engram/client/node';

const web = new Engram({ baseUrl: 'http://127.0.0.1:1', transport: 'grpc-web', tokenProvider: async () => 't' });
const node = new NodeEngram({ baseUrl: 'http://127.0.0.1:1', transport: 'grpc', token: 't', retry: { maxAttempts: 2 } });
// @ts-expect-error gRPC over HTTP/2 is only in the node entry
new Engram({ baseUrl: 'http://127.0.0.1:1', transport: 'grpc' });

export async function names(): Promise<string[]> {
  const out: string[] = [];
  const created = await web.memories.create({ memory: { type: MemoryType.FACT, text: 'x' } });
  const status: governance.MemoryStatus | undefined = created.memory?.status;
  out.push(String(status));
  for await (const memory of node.memories.list({ pageSize: 2 })) {
    const m: Memory = memory;
    out.push(m.name);
  }
  const page: Page<Memory> = await web.memories.list().page();
  out.push(page.nextPageToken);
  const hits = await web.search({ query: 'q', topK: 3 });
  out.push(...hits.results.map((r) => r.name));
  for await (const delta of node.chat({ session: 's', userMessage: 'u', budget: { totalTokens: 10 } })) out.push(delta.text);
  await node.documents.ingest(new Uint8Array([1]), { document: { mimeType: 'text/plain' }, onProgress: (p) => out.push(String(p.bytesReceived)) });
  try {
    await web.memories.get('memories/x');
  } catch (error) {
    if (error instanceof EngramError && error.code === Code.NotFound) out.push(error.reason ?? '', error.codeName);
  }
  // @ts-expect-error page sizes are numbers
  web.memories.list({ pageSize: 'two' });
  return out;
}
`;

const secret = newSecret();
let model: ScriptedOpenAI | undefined;
let server: TestServer | undefined;
let project: string;
let tarball: string;

beforeAll(async () => {
  model = await startScriptedOpenAI((request) =>
    request.body.stream === true
      ? { content: CHAT_REPLY, chunks: ['Hello from ', 'the scripted model, ', 'streamed in pieces.'] }
      : { status: 500, message: 'only chat replies are scripted' },
  );
  server = await startServer(secret, {
    env: {
      ENGRAM_LLM_BASE_URL: model.baseURL,
      ENGRAM_LLM_MODEL: 'scripted-model',
      ENGRAM_LLM_API_KEY: 'test-key',
      ENGRAM_LLM_MAX_RETRIES: '0',
    },
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
});

describe('the @engram/client tarball in a fresh project', () => {
  it('packs: npm pack builds dist and the tarball holds dist and README, no sources', async () => {
    const packDir = tempDir();
    const packed = await run('npm', ['pack', '--pack-destination', packDir, '--json'], SDK_DIR, {}, 180_000);
    expectSuccess('npm pack', packed);
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    tarball = join(packDir, info!.filename);
    const paths = info!.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/node.js',
        'dist/node.d.ts',
      ]),
    );
    expect(paths.filter((p) => !p.startsWith('dist/') && p !== 'package.json' && p !== 'README.md')).toEqual(
      [],
    );
    expect(paths.some((p) => p.endsWith('.spec.js') || p.endsWith('.spec.d.ts'))).toBe(false);
  }, 240_000);

  it('installs into a new project with only public dependencies', async () => {
    project = tempDir();
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'sdk-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2),
    );
    const installed = await run(
      'npm',
      ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'],
      project,
      {},
      240_000,
    );
    expectSuccess('npm install <tarball>', installed);
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules/@engram/client/package.json'), 'utf8'),
    ) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      '@bufbuild/protobuf',
      '@connectrpc/connect',
      '@connectrpc/connect-node',
      '@connectrpc/connect-web',
    ]);
    expect(existsSync(join(project, 'node_modules/@engram/contracts'))).toBe(false);
    const dts = readFileSync(join(project, 'node_modules/@engram/client/dist/index.d.ts'), 'utf8');
    expect(dts).not.toContain('@engram/contracts');
  }, 300_000);

  it('type-checks a TypeScript consumer against the installed declarations', async () => {
    writeFileSync(join(project, 'consumer.ts'), CONSUMER_TS);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023', 'DOM'],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(repoRoot, 'node_modules/@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    const checked = await run(
      process.execPath,
      [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'],
      project,
      {},
      120_000,
    );
    expectSuccess('tsc on consumer.ts', checked);
  }, 180_000);

  describe.each(PROTOCOLS)('over %s', (protocol) => {
    it('runs a plain node script: sessions, paginated memories, search, context, ingestion, errors, chat', async () => {
      const docText = [
        `# Trams of Lisbon (${protocol})`,
        '',
        'Tram 28 climbs from Martim Moniz through Graça and Alfama to Estrela.',
        'The yellow Remodelado cars date from the 1930s and are still in service.',
        '',
        'Tram 15 runs along the river to Belém, with modern articulated cars.',
      ].join('\n');
      const docPath = join(project, `doc-${protocol}.md`);
      writeFileSync(docPath, docText);
      writeFileSync(join(project, 'smoke.mjs'), SMOKE);
      const result = await run(
        process.execPath,
        ['smoke.mjs'],
        project,
        {
          PROTOCOL: protocol,
          ENGRAM_URL: server!.server.url,
          ENGRAM_TOKEN: await tokenFor(secret, { subject: `sdk-ann-${protocol}`, tenantId: 'sdk' }),
          OTHER_TOKEN: await tokenFor(secret, { subject: `sdk-bob-${protocol}`, tenantId: 'sdk' }),
          DOC_PATH: docPath,
          DOC_TEXT: docText,
          NODE_OPTIONS: '',
        },
        120_000,
      );
      expectSuccess(`smoke.mjs over ${protocol}`, result);
      const line = result.stdout.split('\n').find((l) => l.startsWith('sdk_smoke: OK '));
      expect(line).toBeDefined();
      const summary = JSON.parse(line!.slice('sdk_smoke: OK '.length)) as Record<string, unknown>;
      expect(summary).toMatchObject({
        protocol,
        session: expect.stringMatching(/^sessions\/[0-9A-Z]{26}$/),
        messagesAppended: 3,
        messagesListed: 3,
        memoriesCreated: 5,
        memoriesListed: 5,
        memoryPages: 3,
        listedAllCreated: true,
        firstPageSize: 2,
        firstPageHasNext: true,
        searchFoundMemory: true,
        contextLastIsQuestion: true,
        budgetTokens: 2000,
        document: expect.stringMatching(/^documents\/[0-9A-Z]{26}$/),
        strangerGet: { code: 5, codeName: 'NOT_FOUND', reason: 'RESOURCE_NOT_FOUND' },
        invalidList: { code: 3, codeName: 'INVALID_ARGUMENT', reason: 'FIELD_INVALID' },
        unauthenticated: { code: 16, codeName: 'UNAUTHENTICATED', reason: 'TOKEN_MISSING' },
        codeNotFound: 5,
        chatText: CHAT_REPLY,
      });
      expect(summary['contextMessages']).toBeGreaterThanOrEqual(2);
      expect(summary['contextTokens']).toBeLessThanOrEqual(2000);
      expect(summary['chunksWritten']).toBeGreaterThanOrEqual(1);
      expect(summary['chunksListed']).toBe(summary['chunksWritten']);
      expect(summary['rawSession']).toBe(summary['session']);
      // The tokenProvider is asked per request (dozens of calls here), not once.
      expect(summary['tokenCalls']).toBeGreaterThan(10);
      expect(summary['exportHeader']).toBe('engram.export');
      expect(summary['exportTrailerRecords']).toBe((summary['exportLines'] as number) - 2);
      if (protocol === 'grpc') {
        // Re-importing one's own export changes nothing.
        expect(summary['reimportCreated']).toBe(0);
        expect(summary['reimportUnchanged']).toBe(summary['exportTrailerRecords']);
      } else {
        expect(summary['importOverFetch']).toMatchObject({ codeName: 'UNIMPLEMENTED' });
      }
      if (protocol === 'grpc') {
        // Streamed from a file in 100-byte parts: the server reports its phases as they pass.
        expect(summary['progressPhases']).toEqual(expect.arrayContaining(['RECEIVING', 'WRITING']));
      } else {
        // Over fetch the document goes in one IngestDocument request: no progress stream.
        expect(summary['progressPhases']).toEqual([]);
      }
    }, 150_000);
  });
});
