import { toJson } from '@bufbuild/protobuf';
import type { Command } from 'commander';
import { Scope } from '@engram/contracts/common';
import {
  ActorKind,
  DecisionOutcome,
  DecisionSchema,
  MemoryRevisionSchema,
  MemorySchema,
  MemoryStatus,
  MemoryType,
  ReviewVerdict,
  RevisionAction,
  SourceKind,
  type Memory,
} from '@engram/contracts/governance';
import { action, parser } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { usageError } from '../errors.js';
import {
  enumLabel,
  formatScore,
  formatTime,
  memoryContent,
  oneLine,
  parsePositiveInt,
  renderFields,
  renderTable,
  resourceName,
} from '../format.js';
import { listAll } from './shared.js';

function enumValue<T extends Record<string, string | number>>(enumObject: T, label: string, option: string) {
  const value = enumObject[label.trim().toUpperCase() as keyof T];
  if (typeof value !== 'number' || value === 0) {
    const names = Object.keys(enumObject).filter((k) => Number.isNaN(Number(k)) && k !== 'UNSPECIFIED');
    throw new Error(`${option}: unknown value "${label}"; expected one of ${names.join(', ').toLowerCase()}`);
  }
  return value as T[keyof T];
}

/** `user alice`, `extractor extractor/offline`, … */
export function actorLabel(
  actor: { kind: ActorKind; subject: string; component: string } | undefined,
): string {
  if (actor === undefined) return '-';
  const who = actor.subject !== '' ? actor.subject : actor.component;
  return `${enumLabel(ActorKind, actor.kind).toLowerCase()} ${who}`.trim();
}

/** The fields `memories show` prints. */
export function memoryFields(memory: Memory): [string, string][] {
  return [
    ['name', memory.name],
    ['type', enumLabel(MemoryType, memory.type)],
    [
      'status',
      enumLabel(MemoryStatus, memory.status) +
        (memory.statusReason === '' ? '' : ` (${memory.statusReason})`),
    ],
    ['content', memoryContent(memory)],
    ['scope', enumLabel(Scope, memory.scope) + (memory.orgId === '' ? '' : ` ${memory.orgId}`)],
    ['owner', memory.owner],
    ['source', enumLabel(SourceKind, memory.sourceKind)],
    ['confidence', formatScore(memory.confidence, 2)],
    ['evergreen', memory.evergreen ? 'yes' : 'no'],
    [
      'evidence',
      [...(memory.evidence?.messages ?? []), ...(memory.evidence?.chunks ?? [])].join(', ') || '-',
    ],
    ['supersedes', memory.supersedes || '-'],
    ['superseded by', memory.supersededBy || '-'],
    ['created', formatTime(memory.createTime)],
    ['updated', formatTime(memory.updateTime)],
    ['expires', formatTime(memory.expireTime)],
    ['version', String(memory.version)],
  ];
}

/** `engram memories …`: governance of the caller's memories. */
export function registerMemories(program: Command, io: CliRuntime): void {
  const memories = program.command('memories').description('list, show, trace, delete and review memories');
  registerList(memories, io);
  registerShow(memories, io);
  registerHistory(memories, io);
  registerDelete(memories, io);
  registerReview(memories, io);
}

/** `engram memories list`: memories visible to the current user (ACTIVE unless --status). */
function registerList(memories: Command, io: CliRuntime): void {
  memories
    .command('list')
    .description('memories visible to the current user (ACTIVE unless --status)')
    .option(
      '--status <status>',
      'active, quarantined, superseded, expired, deleted (repeatable)',
      (v: string, prev: number[] | undefined) => [
        ...(prev ?? []),
        parser((x) => enumValue(MemoryStatus, x, '--status'))(v),
      ],
    )
    .option(
      '--type <type>',
      'fact, episode, event, foresight, summary (repeatable)',
      (v: string, prev: number[] | undefined) => [
        ...(prev ?? []),
        parser((x) => enumValue(MemoryType, x, '--type'))(v),
      ],
    )
    .option(
      '--limit <n>',
      'at most this many',
      parser((v) => parsePositiveInt('--limit', v)),
      100,
    )
    .action(
      action(io, async ({ out, connect }, command) => {
        const options = command.opts<{ status?: MemoryStatus[]; type?: MemoryType[]; limit: number }>();
        const connection = await connect();
        const { items, more } = await listAll(async (pageToken) => {
          const r = await connection.governance.listMemories({
            pageSize: Math.min(options.limit, 500),
            pageToken,
            statuses: options.status ?? [],
            types: options.type ?? [],
          });
          return { items: r.memories, nextPageToken: r.nextPageToken };
        }, options.limit);
        out.document({ memories: items.map((m) => toJson(MemorySchema, m)), more });
        if (items.length === 0) {
          out.line('no memories');
          return;
        }
        out.line(
          renderTable(
            ['name', 'type', 'status', 'content', 'confidence', 'created'],
            items.map((m) => [
              m.name,
              enumLabel(MemoryType, m.type),
              enumLabel(MemoryStatus, m.status),
              oneLine(memoryContent(m), 60),
              formatScore(m.confidence, 2),
              formatTime(m.createTime),
            ]),
          ),
        );
        if (more) out.line(out.color.dim(`(more than ${options.limit}; use --limit)`));
      }),
    );
}

/** `engram memories show`: one memory, whatever its status. */
function registerShow(memories: Command, io: CliRuntime): void {
  memories
    .command('show')
    .description('one memory, whatever its status')
    .argument('<name>', 'memory name or id')
    .action(
      action(io, async ({ out, connect }, _command, name) => {
        const connection = await connect();
        const { memory } = await connection.governance.getMemory({
          name: resourceName('memories', String(name)),
        });
        if (memory === undefined) throw new Error('GetMemory answered without a memory');
        out.document({ memory: toJson(MemorySchema, memory) });
        out.line(renderFields(memoryFields(memory)));
      }),
    );
}

/** `engram memories history`: the revisions of a memory, oldest first. */
function registerHistory(memories: Command, io: CliRuntime): void {
  memories
    .command('history')
    .description('the revisions of a memory, oldest first')
    .argument('<name>', 'memory name or id')
    .action(
      action(io, async ({ out, connect }, _command, name) => {
        const connection = await connect();
        const parent = resourceName('memories', String(name));
        const { items } = await listAll(async (pageToken) => {
          const r = await connection.governance.listMemoryRevisions({ parent, pageSize: 500, pageToken });
          return { items: r.revisions, nextPageToken: r.nextPageToken };
        });
        out.document({ memory: parent, revisions: items.map((r) => toJson(MemoryRevisionSchema, r)) });
        out.line(
          renderTable(
            ['version', 'action', 'actor', 'rule', 'reason', 'time'],
            items.map((r) => [
              String(r.version),
              enumLabel(RevisionAction, r.action),
              actorLabel(r.actor),
              r.rule || '-',
              oneLine(r.reason, 50) || '-',
              formatTime(r.createTime),
            ]),
          ),
        );
      }),
    );
}

/** `engram memories delete`: delete a memory (soft: restorable; --purge erases its content). */
function registerDelete(memories: Command, io: CliRuntime): void {
  memories
    .command('delete')
    .description('delete a memory (soft: restorable; --purge erases its content)')
    .argument('<name>', 'memory name or id')
    .option('--reason <text>', 'why (recorded in the revision)')
    .option('--purge', 'erase the content for good')
    .action(
      action(io, async ({ out, connect }, command, name) => {
        const options = command.opts<{ reason?: string; purge?: boolean }>();
        const connection = await connect();
        const { memory } = await connection.governance.deleteMemory({
          name: resourceName('memories', String(name)),
          purge: options.purge === true,
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        out.document({
          memory: memory === undefined ? null : toJson(MemorySchema, memory),
          purged: options.purge === true,
        });
        out.line(`${options.purge === true ? 'purged' : 'deleted'} ${memory?.name ?? String(name)}`);
      }),
    );
}

/** `engram memories review`: approve or reject a QUARANTINED memory (needs the admin role). */
function registerReview(memories: Command, io: CliRuntime): void {
  memories
    .command('review')
    .description('approve or reject a QUARANTINED memory (needs the admin role)')
    .argument('<name>', 'memory name or id')
    .option('--approve', 'release it (ACTIVE)')
    .option('--reject', 'refuse it (DELETED)')
    .option('--reason <text>', 'why (shown to the owner)')
    .action(
      action(io, async ({ out, connect }, command, name) => {
        const options = command.opts<{ approve?: boolean; reject?: boolean; reason?: string }>();
        if ((options.approve === true) === (options.reject === true)) {
          throw usageError('memories review needs exactly one of --approve or --reject');
        }
        const verdict = options.approve === true ? ReviewVerdict.APPROVE : ReviewVerdict.REJECT;
        const connection = await connect();
        const answer = await connection.governance.reviewMemory({
          name: resourceName('memories', String(name)),
          verdict,
          reason:
            options.reason ?? `${options.approve === true ? 'approved' : 'rejected'} with the engram CLI`,
        });
        out.document({
          memory: answer.memory === undefined ? null : toJson(MemorySchema, answer.memory),
          decision: answer.decision === undefined ? null : toJson(DecisionSchema, answer.decision),
        });
        out.line(
          `${options.approve === true ? 'approved' : 'rejected'} ${answer.memory?.name ?? String(name)}: now ${enumLabel(MemoryStatus, answer.memory?.status ?? 0)}` +
            (answer.decision === undefined
              ? ''
              : ` (${enumLabel(DecisionOutcome, answer.decision.outcome)})`),
        );
      }),
    );
}
