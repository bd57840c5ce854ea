// `collect`: every finished article's result from the queue into a results file, once each.
import { Command, Option } from 'commander';
import type { ArticleResult } from '../src/index.ts';
import { JsonlResultStore } from '../src/sinks/index.ts';
import { plural } from './format.ts';
import { oneLineErrors } from './one-line-errors.ts';
import { nonEmptyFile } from './output.ts';
import { addQueueOptions, drainedOrGone, EXAMPLES, openQueue, pause, type QueueFlags } from './queue-options.ts';
import { UsageError } from './usage-error.ts';

interface CollectFlags extends QueueFlags {
  output: string;
  follow: boolean;
  resume: boolean;
  overwrite: boolean;
  quiet: boolean;
}

export function collectCommand(onExit: (code: number) => void): Command {
  const command = addQueueOptions(new Command('collect'))
    .description("Write every finished article's result (succeeded and failed, as a run's --output) to a file, once each")
    .addOption(new Option('--output <file.jsonl>', "the results file; '-' for standard output").makeOptionMandatory())
    .addOption(new Option('--follow', 'keep writing results as they finish, until the queue is drained').default(false))
    .addOption(new Option('--resume', "take up an earlier collect's file: keep its successes, write the rest").default(false))
    .addOption(new Option('--overwrite', 'replace an existing --output file').default(false))
    .addOption(new Option('--quiet', 'print nothing but errors').default(false))
    .addHelpText('after', EXAMPLES);
  oneLineErrors(command);
  command.action(async (flags: CollectFlags) => {
    if (flags.resume && flags.overwrite) throw new UsageError('--resume and --overwrite disagree: give one of them');
    if (flags.output === '-' && flags.resume) throw new UsageError('--resume needs a results file, not standard output');
    // The articles the file holds a success of, with the tasks' fingerprints its line was made with.
    const kept = new Map<string, string>();
    const store = flags.output === '-' ? JsonlResultStore.to(process.stdout, 'stdout') : JsonlResultStore.at(flags.output);
    if (flags.output !== '-') {
      if (flags.resume) {
        const prints = new Map<string, string>();
        const taken = await store.takeUp({
          redo: (line) => {
            prints.set(line.id, fingerprintsOf(line));
            return [];
          },
        });
        for (const id of taken.succeeded.keys()) kept.set(id, prints.get(id)!);
      } else if (!flags.overwrite && (await nonEmptyFile(flags.output))) {
        throw new UsageError(`--output ${flags.output} exists and is not empty: --resume to add what is new, --overwrite to replace it`);
      }
    }
    const opened = await openQueue(flags);
    const { queue } = opened;
    if (flags.output !== '-') await store.open({ append: flags.resume });
    const human = flags.output === '-' ? process.stderr : process.stdout;
    const controller = new AbortController();
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => controller.abort());
    let written = 0;
    let newer = 0;
    let unfinished = 0;
    try {
      const write = async (result: ArticleResult) => {
        // A result the file has, made by the same tasks, is not written again; one made by tasks
        // changed since (the article enqueued again) is newer: it goes after, and wins.
        const prints = fingerprintsOf(result);
        const known = kept.get(result.id);
        if (known === prints) return;
        if (known !== undefined) newer++;
        kept.set(result.id, prints);
        await store.write(result);
        written++;
      };
      // Dead letters are written once the queue is drained (or now, without --follow): one put back
      // by retry-failed meanwhile then has one line, its last.
      let afterMs = 0;
      for (;;) {
        const drained = await drainedOrGone(queue);
        for await (const { result, finishedOn } of queue.finished({ states: ['completed'], afterMs })) {
          await write(result);
          afterMs = Math.max(afterMs, finishedOn);
        }
        if (!flags.follow || drained || controller.signal.aborted) {
          for await (const { result } of queue.finished({ states: ['failed'] })) await write(result);
          if (!drained) {
            const counts = await queue.counts();
            unfinished = counts.waiting + counts.active + counts.delayed;
          }
          break;
        }
        await pause(500, controller.signal);
      }
    } finally {
      await store.close().catch(() => {});
      await opened.close();
    }
    // An article with a newer line holds its last only: the file keeps each article once.
    if (newer > 0) await store.compact();
    if (!flags.quiet) {
      human.write(
        `Collected ${plural(written, 'result')} from queue ${queue.name} into ${flags.output === '-' ? 'stdout' : flags.output}` +
          (newer > 0 ? ` (${newer} in place of the file's line, made by tasks changed since)` : '') +
          (unfinished > 0 ? `; ${plural(unfinished, 'job')} not finished yet: collect again with --resume (or --follow)` : '') +
          '\n',
      );
    }
    onExit(controller.signal.aborted ? 130 : 0);
  });
  return command;
}

/** The tasks' fingerprints a result line was made with, as one string to compare ("" for a line without them). */
function fingerprintsOf(line: { readonly fingerprints?: Readonly<Record<string, string>> | undefined }): string {
  return line.fingerprints === undefined ? '' : JSON.stringify(line.fingerprints);
}
