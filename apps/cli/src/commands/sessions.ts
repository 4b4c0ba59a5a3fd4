import { toJson } from '@bufbuild/protobuf';
import type { Command } from 'commander';
import { SessionSchema, SessionStatus } from '@engram/contracts/ingestion';
import { action, parser } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { enumLabel, formatTime, parsePositiveInt, renderTable } from '../format.js';
import { listAll } from './shared.js';

/** `engram sessions`: the caller's sessions, newest first. */
export function registerSessions(program: Command, io: CliRuntime): void {
  program
    .command('sessions')
    .description("list the current user's sessions")
    .option(
      '--limit <n>',
      'at most this many',
      parser((v) => parsePositiveInt('--limit', v)),
      100,
    )
    .action(
      action(io, async ({ out, connect }, command) => {
        const { limit } = command.opts<{ limit: number }>();
        const connection = await connect();
        const { items: sessions, more } = await listAll(async (pageToken) => {
          const r = await connection.ingestion.listSessions({ pageSize: Math.min(limit, 500), pageToken });
          return { items: r.sessions, nextPageToken: r.nextPageToken };
        }, limit);
        out.document({ sessions: sessions.map((s) => toJson(SessionSchema, s)), more });
        if (sessions.length === 0) {
          out.line('no sessions');
          return;
        }
        out.line(
          renderTable(
            ['name', 'display name', 'status', 'messages', 'MemCells', 'last message'],
            sessions.map((s) => [
              s.name,
              s.displayName || '-',
              enumLabel(SessionStatus, s.status),
              String(s.messageCount),
              String(s.memCellCount),
              formatTime(s.lastMessageTime),
            ]),
          ),
        );
        if (more) out.line(out.color.dim(`(more than ${limit}; use --limit)`));
      }),
    );
}
