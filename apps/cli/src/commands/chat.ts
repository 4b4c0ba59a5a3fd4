import { createInterface } from 'node:readline';
import { Code } from '@connectrpc/connect';
import type { Command } from 'commander';
import { FinishReason } from '@engram/contracts/context';
import { action, parser } from '../actions.js';
import type { Connection } from '../connection.js';
import type { CliRuntime } from '../context.js';
import { enumLabel, parsePositiveInt, resourceName } from '../format.js';
import { DEFAULT_BUDGET } from './context.js';
import { failedWith, localTimeZone } from './shared.js';

const CHAT_TIMEOUT_MS = 300_000;

interface ChatOptions {
  readonly session?: string;
  readonly budget: number;
  readonly model?: string;
  readonly system?: string;
}

interface Turn {
  readonly user: string;
  readonly assistant: string;
  readonly finishReason: string;
}

/** `engram chat`: an interactive conversation over ContextService.Chat (needs a configured model). */
export function registerChat(program: Command, io: CliRuntime): void {
  program
    .command('chat')
    .description('chat in a session; answers stream from the configured model (one message per line)')
    .option('-s, --session <session>', 'session name or id (default: a new session)')
    .option(
      '--budget <tokens>',
      'context token budget',
      parser((v) => parsePositiveInt('--budget', v)),
      DEFAULT_BUDGET,
    )
    .option('--model <model>', 'model (one of the server’s allowed chat models)')
    .option('--system <prompt>', 'system prompt')
    .addHelpText('after', '\nType a message and Enter; /exit or end of input (Ctrl-D) ends the chat.')
    .action(
      action(io, async ({ out, connect }, command) => {
        const options = command.opts<ChatOptions>();
        const connection = await connect();
        const interactive = io.stdin.isTTY === true && io.stdout.isTTY === true && !out.json;
        const lines = createInterface({
          input: io.stdin,
          ...(interactive ? { output: io.stdout, prompt: 'you> ' } : {}),
          terminal: interactive,
        });
        let session = options.session === undefined ? undefined : resourceName('sessions', options.session);
        let created = false;
        const turns: Turn[] = [];
        const abort = new AbortController();
        lines.on('SIGINT', () => {
          abort.abort();
          lines.close();
        });
        if (interactive) lines.prompt();
        try {
          for await (const raw of lines) {
            const line = raw.trim();
            if (line === '/exit' || line === '/quit') break;
            if (line === '') {
              if (interactive) lines.prompt();
              continue;
            }
            if (session === undefined) {
              session = await createChatSession(connection);
              created = true;
              out.note(out.color.dim(`session ${session}`));
            }
            try {
              turns.push(await chatTurn(connection, session, line, options, io, out.json, abort.signal));
            } catch (error) {
              // A session made only for this chat is removed again when the chat cannot start.
              if (
                created &&
                turns.length === 0 &&
                failedWith(error, Code.FailedPrecondition, 'MODEL_NOT_CONFIGURED')
              ) {
                await connection.ingestion.deleteSession({ name: session }).catch(() => undefined);
              }
              throw error;
            }
            if (interactive) lines.prompt();
          }
        } finally {
          lines.close();
        }
        out.document({ session: session ?? null, turns });
      }),
    );
}

async function createChatSession(connection: Connection): Promise<string> {
  const timeZone = localTimeZone();
  const { session } = await connection.ingestion.createSession({
    session: { displayName: 'engram chat', ...(timeZone === undefined ? {} : { timeZone }) },
  });
  if (session === undefined) throw new Error('CreateSession answered without a session');
  return session.name;
}

async function chatTurn(
  connection: Connection,
  session: string,
  userMessage: string,
  options: ChatOptions,
  io: CliRuntime,
  json: boolean,
  signal: AbortSignal,
): Promise<Turn> {
  const stream = connection.context.chat(
    {
      session,
      userMessage,
      budget: { totalTokens: options.budget },
      ...(options.model === undefined ? {} : { model: options.model }),
      ...(options.system === undefined ? {} : { systemPrompt: options.system }),
    },
    { timeoutMs: CHAT_TIMEOUT_MS, signal },
  );
  let text = '';
  let finishReason = '-';
  for await (const response of stream) {
    const event = response.event;
    if (event.case === 'delta') {
      text += event.value.text;
      if (!json) io.stdout.write(event.value.text);
    } else if (event.case === 'done') {
      if (text === '' && event.value.text !== '') {
        text = event.value.text;
        if (!json) io.stdout.write(text);
      }
      finishReason = enumLabel(FinishReason, event.value.finishReason);
    }
  }
  if (!json) io.stdout.write('\n');
  return { user: userMessage, assistant: text, finishReason };
}
