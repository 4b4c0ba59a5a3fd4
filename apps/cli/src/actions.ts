import { InvalidArgumentError, type Command } from 'commander';
import { commandContext, type CliRuntime, type CommandContext } from './context.js';

/** Collects a repeatable option's values. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Wraps a value parser so that its error becomes commander's usage error (exit 2). */
export function parser<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (error) {
      throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
    }
  };
}

/** The handler of a command: its context, the command (for its options) and its arguments. */
export type Action = (context: CommandContext, command: Command, ...args: unknown[]) => Promise<void>;

/** Adapts a handler to commander's action signature; failures are handled by `run`. */
export function action(io: CliRuntime, handler: Action): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args.at(-1) as Command;
    await handler(commandContext(io, command), command, ...args.slice(0, -1));
  };
}
