import { Code, ConnectError } from '@connectrpc/connect';
import type { ExtractionJob } from '@engram/contracts/governance';
import { type MemCell, type Message, MessageRole } from '@engram/contracts/ingestion';
import type { EngramClients } from './clients.js';

/** The one session per user that `remember` writes to (by external id), shared by the CLI and MCP. */
export const REMEMBER_SESSION_EXTERNAL_ID = 'engram-cli-remember';

/** How long `remember` waits for the extraction of the flushed MemCell by default. */
export const REMEMBER_EXTRACTION_WAIT_SECONDS = 60;

/** Options of {@link rememberStatement}. */
export interface RememberOptions {
  /** Time zone of the remember session when it has to be created (DATE_CHANGE boundaries, dates). */
  readonly timeZone?: string | undefined;
  /** Recorded as the flush reason (default `remember`). */
  readonly reason?: string;
  /** Seconds to wait for the extraction (default {@link REMEMBER_EXTRACTION_WAIT_SECONDS}). */
  readonly waitSeconds?: number;
}

/** What became of a statement: where it was stored, as what, and the extraction's decisions. */
export interface RememberOutcome {
  readonly session: string;
  /** The stored message (its content as ingestion stored it: secrets redacted). */
  readonly message: Message | undefined;
  /** Whether ingestion redacted a secret from the text before storing it. */
  readonly redacted: boolean;
  /** The MemCell the flush closed (undefined: the session had no open messages). */
  readonly memCell: MemCell | undefined;
  /** The extraction job of the MemCell, once it started (its decisions, one per candidate). */
  readonly job: ExtractionJob | undefined;
  /** How long the extraction was waited for. */
  readonly waitSeconds: number;
}

/** Finds or creates the caller's remember session. */
async function rememberSession(clients: EngramClients, timeZone: string | undefined): Promise<string> {
  const find = async () =>
    (await clients.ingestion.listSessions({ externalId: REMEMBER_SESSION_EXTERNAL_ID, pageSize: 1 }))
      .sessions[0]?.name;
  const existing = await find();
  if (existing !== undefined) return existing;
  try {
    const { session } = await clients.ingestion.createSession({
      session: {
        displayName: 'engram remember',
        externalId: REMEMBER_SESSION_EXTERNAL_ID,
        ...(timeZone === undefined ? {} : { timeZone }),
      },
    });
    if (session === undefined) throw new Error('CreateSession answered without a session');
    return session.name;
  } catch (error) {
    // Created meanwhile by a concurrent remember: use that one.
    if (error instanceof ConnectError && error.code === Code.AlreadyExists) {
      const again = await find();
      if (again !== undefined) return again;
    }
    throw error;
  }
}

/**
 * Remembers a statement through the same path as a conversation: stored as a user message of the
 * caller's remember session (ingestion redacts secrets first), closed into a MemCell by a flush,
 * extracted and judged by governance's hard rules. Returns every decision; decides nothing itself.
 */
export async function rememberStatement(
  clients: EngramClients,
  text: string,
  options: RememberOptions = {},
): Promise<RememberOutcome> {
  const waitSeconds = options.waitSeconds ?? REMEMBER_EXTRACTION_WAIT_SECONDS;
  const session = await rememberSession(clients, options.timeZone);
  const appended = await clients.ingestion.appendMessages({
    parent: session,
    messages: [{ role: MessageRole.USER, content: text }],
  });
  const message = appended.messages[0];
  const flushed = await clients.ingestion.flushSession(
    {
      name: session,
      reason: options.reason ?? 'remember',
      waitForExtraction: true,
      extractionWaitTimeout: { seconds: BigInt(waitSeconds) },
    },
    { timeoutMs: (waitSeconds + 15) * 1000 },
  );
  const memCell = flushed.memCell;
  let job: ExtractionJob | undefined;
  if (memCell !== undefined && memCell.extractionJob !== '') {
    job = (await clients.governance.getExtractionJob({ name: memCell.extractionJob })).extractionJob;
  }
  return {
    session,
    message,
    redacted: message?.content.includes('[redacted:') ?? false,
    memCell,
    job,
    waitSeconds,
  };
}
