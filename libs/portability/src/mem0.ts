import { z } from 'zod';
import { errors } from '@engram/errors';
import type { ExportedMemory, ExportedMemoryRevision } from './format.js';
import { randomPart, timePart } from './ids.js';
import { ExportWriter } from './lines.js';

/**
 * One memory of mem0's export (`client.get_all()` / `Memory.get_all()`: a list, or an object with
 * `results` or `memories`): its id, text, owner and timestamps; everything else is optional.
 */
const mem0Memory = z.looseObject({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  memory: z.string().min(1),
  user_id: z.string().min(1).nullish(),
  agent_id: z.string().nullish(),
  run_id: z.string().nullish(),
  hash: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  categories: z.array(z.string()).nullish(),
  created_at: z.string().nullish(),
  updated_at: z.string().nullish(),
});
type Mem0Memory = z.infer<typeof mem0Memory>;

const mem0Export = z.union([
  z.array(z.unknown()),
  z.looseObject({ results: z.array(z.unknown()) }).transform((o) => o.results),
  z.looseObject({ memories: z.array(z.unknown()) }).transform((o) => o.memories),
]);

/** Options of {@link convertMem0}. */
export interface Mem0Options {
  /** Whose memories to convert, when the file holds several users'. */
  readonly userId?: string;
  /** The time of the conversion (epoch ms): the header's `exportedAt`, and a memory's time when mem0 gave none. */
  readonly now?: number;
}

/** A ULID with the time `timeMs` and 80 bits derived from `seed`: the same mem0 memory always gets the same id. */
function ulidFrom(timeMs: number, seed: string): string {
  return timePart(timeMs) + randomPart(seed);
}

function epochMs(value: string | null | undefined, fallback: number, index: number, field: string): number {
  if (value === undefined || value === null || value === '') return fallback;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw errors.invalidArgument('IMPORT_RECORD_INVALID', `memory ${index + 1}: ${field} is not a date`, {
      line: index + 1,
      kind: 'mem0',
      field,
    });
  }
  return ms;
}

/** mem0's free-form metadata as Engram's string map (non-strings as JSON), plus where it came from. */
function metadataOf(m: Mem0Memory): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.metadata ?? {})) {
    if (v !== null && v !== undefined) out[k.slice(0, 256)] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  out['mem0_id'] = m.id;
  if (m.hash) out['mem0_hash'] = m.hash;
  if (m.agent_id) out['mem0_agent_id'] = m.agent_id;
  if (m.run_id) out['mem0_run_id'] = m.run_id;
  if (m.categories && m.categories.length > 0) out['mem0_categories'] = m.categories.join(',');
  return out;
}

/** The users a mem0 export holds memories of, with how many each. */
export function mem0Users(input: unknown): Map<string, number> {
  const users = new Map<string, number>();
  for (const m of parseMem0(input)) {
    const user = m.user_id ?? '';
    users.set(user, (users.get(user) ?? 0) + 1);
  }
  return users;
}

function parseMem0(input: unknown): Mem0Memory[] {
  const list = mem0Export.safeParse(input);
  if (!list.success) {
    throw errors.invalidArgument(
      'IMPORT_FORMAT_UNSUPPORTED',
      "not a mem0 export: expected a JSON list of memories, or an object with 'results' or 'memories'",
      { format: 'mem0' },
    );
  }
  return list.data.map((item, index) => {
    const parsed = mem0Memory.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = (issue?.path ?? []).map(String).join('.');
      throw errors.invalidArgument(
        'IMPORT_RECORD_INVALID',
        `memory ${index + 1}: ${field || 'the entry'}: ${issue?.message ?? 'invalid'}`,
        { line: index + 1, kind: 'mem0', field },
      );
    }
    return parsed.data;
  });
}

/**
 * Converts mem0's memory export into the lines of an Engram export for one user: each mem0 memory
 * becomes an ACTIVE SELF FACT (source IMPORT, namespace `mem0`, key `mem0/<id>`) with its text,
 * its times and its metadata (plus `mem0_id`, `mem0_hash`, `mem0_categories`, agent and run ids),
 * and a CREATE revision by `import:mem0`. The header's source is tenant `mem0` and the user, so the
 * import derives fresh identifiers for its target; converting the same file again gives the same
 * lines, so importing twice writes once. Secrets are not removed here: ImportUser redacts every
 * free-text field on the way in.
 */
export function convertMem0(input: unknown, options: Mem0Options = {}): string[] {
  const now = options.now ?? Date.now();
  const all = parseMem0(input);
  const users = new Set(all.map((m) => m.user_id ?? ''));
  const userId = options.userId ?? (users.size === 1 ? [...users][0] : undefined);
  if (userId === undefined || userId === '') {
    throw errors.invalidArgument(
      'FIELD_REQUIRED',
      users.size > 1
        ? `the mem0 export holds the memories of ${users.size} users: choose one (--user)`
        : 'the mem0 export names no user_id: choose the user (--user)',
      { field: 'user' },
    );
  }
  const mine = all.filter((m) => (m.user_id ?? userId) === userId);
  const memories: ExportedMemory[] = [];
  const revisions: ExportedMemoryRevision[] = [];
  mine.forEach((m, index) => {
    const createdAt = epochMs(m.created_at, now, index, 'created_at');
    const updatedAt = Math.max(createdAt, epochMs(m.updated_at, createdAt, index, 'updated_at'));
    const memory: ExportedMemory = {
      id: ulidFrom(createdAt, `mem0\u0000${userId}\u0000${m.id}`),
      orgId: '',
      scope: 'SELF',
      type: 'FACT',
      namespace: 'mem0',
      key: `mem0/${m.id}`.slice(0, 512),
      text: m.memory,
      evergreen: false,
      sourceKind: 'IMPORT',
      confidence: 1,
      status: 'ACTIVE',
      statusReason: '',
      evidence: { messageIds: [], chunkIds: [] },
      languageCode: '',
      metadata: metadataOf(m),
      createdAt,
      updatedAt,
      version: 1,
    };
    memories.push(memory);
    revisions.push({
      id: ulidFrom(createdAt, `mem0-revision\u0000${userId}\u0000${m.id}`),
      memoryId: memory.id,
      version: 1,
      action: 'CREATE',
      actorKind: 'SYSTEM',
      actorId: 'import:mem0',
      reason: 'imported from mem0',
      rule: '',
      requestId: '',
      after: memory,
      changedPaths: [],
      createdAt,
    });
  });
  const writer = new ExportWriter();
  return [
    writer.header({
      schema: '',
      producer: 'engram convert mem0',
      exportedAt: new Date(now).toISOString(),
      source: { tenant: 'mem0', subject: userId },
      counts: { memory: memories.length, memory_revision: revisions.length },
    }),
    ...memories.map((m) => writer.record('memory', m)),
    ...revisions.map((r) => writer.record('memory_revision', r)),
    writer.trailer(),
  ];
}
