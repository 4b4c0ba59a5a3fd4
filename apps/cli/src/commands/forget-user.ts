import { toJson } from '@bufbuild/protobuf';
import type { Command } from 'commander';
import { ForgetReceiptSchema, ForgetReceiptState, type ForgetReceipt } from '@engram/contracts/governance';
import { action } from '../actions.js';
import type { CliRuntime } from '../context.js';
import { usageError } from '../errors.js';
import { enumLabel, renderFields } from '../format.js';

const WAIT_POLL_MS = 500;

/** The counts of a receipt as `key: value` lines. */
export function receiptFields(receipt: ForgetReceipt): [string, string][] {
  const c = receipt.counts;
  return [
    ['receipt', receipt.name],
    ['subject', receipt.subject],
    ['state', enumLabel(ForgetReceiptState, receipt.state)],
    ['memories', String(c?.memories ?? 0)],
    ['revisions redacted', String(c?.revisionsRedacted ?? 0)],
    ['extraction jobs', String(c?.extractionJobs ?? 0)],
    ['documents', String(c?.documents ?? 0)],
    ['chunks', String(c?.chunks ?? 0)],
    ['sessions', String(c?.sessions ?? 0)],
    ['messages', String(c?.messages ?? 0)],
    ['MemCells', String(c?.memCells ?? 0)],
    ['session states', String(c?.sessionStates ?? 0)],
    ['vector points', String(c?.vectorPoints ?? 0)],
  ];
}

/** `engram forget-user`: erases everything the tenant holds about a user (governance ForgetUser). */
export function registerForgetUser(program: Command, io: CliRuntime): void {
  program
    .command('forget-user')
    .description('erase everything about a user (yourself, or anyone with the admin role); needs --yes')
    .option('--subject <subject>', "another user to forget (needs the admin role); default: the token's user")
    .option('--reason <text>', 'why, recorded on the receipt (must not contain the erased content)')
    .option('--wait <seconds>', 'wait up to this long for the receipt to be COMPLETED', '30')
    .option('--yes', 'confirm: this cannot be undone')
    .addHelpText('after', '\nForget yourself: engram --user alice forget-user --yes')
    .action(
      action(io, async ({ out, connect }, command) => {
        const options = command.opts<{ subject?: string; reason?: string; wait: string; yes?: boolean }>();
        const waitSeconds = Number(options.wait);
        if (!Number.isFinite(waitSeconds) || waitSeconds < 0)
          throw usageError('--wait expects seconds (0 or more)');
        const connection = await connect();
        const subject = options.subject ?? connection.credential.subject;
        if (options.yes !== true) {
          throw usageError(`forget-user erases everything about "${subject}" for good; add --yes to confirm`);
        }
        let { forgetReceipt: receipt } = await connection.governance.forgetUser({
          subject,
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        if (receipt === undefined) throw new Error('ForgetUser answered without a receipt');
        const deadline = Date.now() + waitSeconds * 1000;
        while (receipt.state === ForgetReceiptState.PENDING && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
          receipt =
            (await connection.governance.getForgetReceipt({ name: receipt.name })).forgetReceipt ?? receipt;
        }
        out.document({ forgetReceipt: toJson(ForgetReceiptSchema, receipt) });
        out.line(renderFields(receiptFields(receipt)));
        if (receipt.state === ForgetReceiptState.PENDING) {
          out.line(
            out.color.yellow(
              'still PENDING: the index and other services have not confirmed yet (the erasure goes on).',
            ),
          );
        }
      }),
    );
}
