import { toJson } from '@bufbuild/protobuf';
import { Option, type Command } from 'commander';
import { MessageRole, MessageSchema } from '@engram/contracts/ingestion';
import { action } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { oneLine } from '../format.js';
import { sessionFor } from './shared.js';

/** `engram append`: stores a message in a session without calling any model. */
export function registerAppend(program: Command, io: CliRuntime): void {
  program
    .command('append')
    .description('append a message to a session without calling a model')
    .argument('<text>', 'the message')
    .requiredOption('-s, --session <session>', 'session name or id, or `new` to create one')
    .addOption(new Option('-r, --role <role>', 'who said it').choices(['user', 'assistant']).default('user'))
    .action(
      action(io, async ({ out, connect }, command, text) => {
        const options = command.opts<{ session: string; role: 'user' | 'assistant' }>();
        const connection = await connect();
        const session = await sessionFor(connection, options.session, 'engram append');
        const answer = await connection.ingestion.appendMessages({
          parent: session.name,
          messages: [
            {
              role: options.role === 'user' ? MessageRole.USER : MessageRole.ASSISTANT,
              content: String(text),
            },
          ],
        });
        const message = answer.messages[0];
        out.document({
          session: session.name,
          created: session.created,
          messages: answer.messages.map((m) => toJson(MessageSchema, m)),
          closedMemCells: answer.closedMemCells.map((c) => c.name),
        });
        if (session.created) out.line(`created ${session.name}`);
        if (message !== undefined) {
          out.line(
            `appended ${message.name} (${options.role}, sequence ${message.sequence}, ${message.tokenCount} tokens)`,
          );
          if (message.content.includes('[redacted:')) {
            out.line(
              out.color.yellow(
                `stored as: ${oneLine(message.content, 200)} (secrets redacted by the server)`,
              ),
            );
          }
        }
        for (const cell of answer.closedMemCells) out.line(`closed ${cell.name}`);
      }),
    );
}
