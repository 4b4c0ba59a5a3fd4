import { toJson } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import type { Command } from 'commander';
import { ItemKind } from '@engram/contracts/common';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { HealthCheckResponse_ServingStatus as ServingStatus } from '@engram/contracts/grpc';
import { IngestionService } from '@engram/contracts/ingestion';
import {
  IndexBackend,
  IndexStatusSchema,
  RetrievalService,
  type IndexStatus,
} from '@engram/contracts/retrieval';
import { action } from '../actions.js';
import type { Connection } from '../connection.js';
import type { CliRuntime } from '../context.js';
import { EXIT, cliErrorFromCall } from '../errors.js';
import { enumLabel, formatTime, renderTable } from '../format.js';
import { failedWith, listAll } from './shared.js';

/** Service names checked through grpc.health.v1; `''` is the server as a whole. */
export const HEALTH_SERVICES = [
  '',
  IngestionService.typeName,
  GovernanceService.typeName,
  RetrievalService.typeName,
  ContextService.typeName,
] as const;

const HEALTH_TIMEOUT_MS = 5_000;

async function countOf(page: (token: string) => Promise<{ items: unknown[]; nextPageToken: string }>) {
  return (await listAll(page)).items.length;
}

/** Counts of what the caller can see, by listing (500 per page). */
async function visibleCounts(connection: Connection) {
  const [memories, sessions, documents] = await Promise.all([
    countOf(async (pageToken) => {
      const r = await connection.governance.listMemories({ pageSize: 500, pageToken });
      return { items: r.memories, nextPageToken: r.nextPageToken };
    }),
    countOf(async (pageToken) => {
      const r = await connection.ingestion.listSessions({ pageSize: 500, pageToken });
      return { items: r.sessions, nextPageToken: r.nextPageToken };
    }),
    countOf(async (pageToken) => {
      const r = await connection.ingestion.listDocuments({ pageSize: 500, pageToken });
      return { items: r.documents, nextPageToken: r.nextPageToken };
    }),
  ]);
  return { activeMemories: memories, sessions, documents };
}

/** `engram status`: health of each service, the index, and what the caller can see. */
export function registerStatus(program: Command, io: CliRuntime): void {
  program
    .command('status')
    .description('server health per service, index lag and counts, and what the current user can see')
    .action(
      action(io, async ({ out, connect, setExitCode }) => {
        const connection = await connect();
        const health: { service: string; status: string }[] = [];
        for (const service of HEALTH_SERVICES) {
          try {
            const answer = await connection.health.check({ service }, { timeoutMs: HEALTH_TIMEOUT_MS });
            health.push({
              service: service === '' ? '(server)' : service,
              status: enumLabel(ServingStatus, answer.status),
            });
          } catch (error) {
            const failure = cliErrorFromCall(error, connection.addr);
            if (failure.exitCode === EXIT.UNREACHABLE) throw failure;
            health.push({
              service: service === '' ? '(server)' : service,
              status: `error: ${failure.message}`,
            });
          }
        }
        const serving = health.every((h) => h.status === 'SERVING');

        let index: IndexStatus | undefined;
        let indexNote: string | undefined;
        try {
          index = (await connection.retrieval.getIndexStatus({})).indexStatus;
        } catch (error) {
          if (failedWith(error, Code.PermissionDenied)) {
            indexNote = `index status needs the admin role (token of ${connection.credential.subject} has none; try \`engram --role admin status\` on the server's machine)`;
          } else {
            const failure = cliErrorFromCall(error, connection.addr);
            if (failure.exitCode !== EXIT.SERVER_ERROR) throw failure;
            indexNote = `index status unavailable: ${failure.message}`;
          }
        }
        const counts = await visibleCounts(connection);

        out.document({
          addr: connection.addr,
          user: connection.credential.subject,
          credential: connection.credential.source,
          serving,
          health,
          index: index === undefined ? null : toJson(IndexStatusSchema, index),
          ...(indexNote === undefined ? {} : { indexNote }),
          counts,
        });
        const { color } = out;
        out.line(
          `${color.bold('Engram')} at ${connection.addr}: ${serving ? color.green('SERVING') : color.red('NOT SERVING')}`,
        );
        out.line(
          renderTable(
            ['service', 'health'],
            health.map((h) => [
              h.service,
              h.status === 'SERVING' ? color.green(h.status) : color.red(h.status),
            ]),
          ),
        );
        out.line(
          `user: ${connection.credential.subject} (${connection.credential.source === 'minted' ? 'local token' : 'ENGRAM_TOKEN'})`,
        );
        out.line(
          `visible: ${counts.activeMemories} active memories, ${counts.sessions} sessions, ${counts.documents} documents`,
        );
        if (index !== undefined) {
          out.line(
            `index: ${index.healthy ? color.green('healthy') : color.red('unhealthy')}, backend ${enumLabel(IndexBackend, index.backend)}, model ${index.embeddingModel || '-'}, outbox pending ${index.outboxPending} (retrying ${index.outboxRetrying}), oldest pending ${index.oldestPendingAge === undefined ? '-' : `${index.oldestPendingAge.seconds}s`}, last indexed ${formatTime(index.lastIndexedTime)}`,
          );
          out.line(
            renderTable(
              ['kind', 'source rows', 'indexed points', 'drift'],
              index.kinds.map((k) => [
                enumLabel(ItemKind, k.kind),
                String(k.sourceRows),
                k.indexedPoints === undefined ? '-' : String(k.indexedPoints),
                k.drift === undefined ? '-' : String(k.drift),
              ]),
            ),
          );
          for (const problem of index.problems) out.line(color.yellow(`problem: ${problem}`));
        } else if (indexNote !== undefined) {
          out.line(color.yellow(indexNote));
        }
        if (!serving) setExitCode(EXIT.SERVER_ERROR);
      }),
    );
}
