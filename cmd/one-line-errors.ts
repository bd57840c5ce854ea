import type { Command } from 'commander';
import { showAcceptedValues } from './parse-values.ts';

/**
 * How every command reports a usage error: one line (commander puts its "did you mean" on a line
 * of its own), thrown back to `main` for the exit code instead of exiting inside commander.
 */
export function oneLineErrors(command: Command): Command {
  return showAcceptedValues(command)
    .showSuggestionAfterError(true)
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({
      outputError: (text, write) => write(text.replace(/\n\(Did you mean (.*)\?\)/, ' (did you mean $1?)')),
    });
}
