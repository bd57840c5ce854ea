// Where the results of a run go (--output FILE or -): the flags made a result store, and the checks
// that --resume takes up a run of the same input.
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { generatedArticle, type Article } from '../src/index.ts';
import { JsonlResultStore, resumedSource, type KeepSucceededOptions, type ResumedSource } from '../src/sinks/index.ts';
import type { RunInput } from './input.ts';
import { plural } from './format.ts';
import { UsageError } from './usage-error.ts';
import type { RunFlags } from './run-options.ts';

export interface OutputFlags {
  output?: string;
  resume: boolean;
  overwrite: boolean;
}

export interface RunOutput {
  /** Keeps one result per line; undefined without --output. */
  readonly store: JsonlResultStore | undefined;
  /** Where the human output goes: standard output, or standard error when the results go there. */
  readonly human: NodeJS.WriteStream;
  /** With --resume: the articles that succeeded before (id → title), which this run skips. */
  readonly kept: ReadonlyMap<string, string> | undefined;
  /** With --resume: what the file says earlier runs spent (its lines' `costUsd`), in USD; 0 otherwise. */
  readonly earlierCostUsd: number;
  /** With --resume: what the file says earlier runs' calls of unknown fate may have cost (its lines' `unknownCostUsd`), in USD; 0 otherwise. */
  readonly earlierUnknownUsd: number;
  /** With --resume: the articles whose outputs of changed tasks (and of those that depend on them) this run makes again, id → those tasks. */
  readonly redo: ReadonlyMap<string, readonly string[]>;
  /** With --resume: the input as the resumed run takes it (the successes skipped, each checked to be the same article). */
  readonly resumed: ((source: Iterable<Article> | AsyncIterable<Article>) => ResumedSource) | undefined;
}

/**
 * Opens the results destination. An existing, non-empty file is never truncated unasked: --resume
 * keeps its successes (rewritten crash-safely) and appends, --overwrite replaces it, and without
 * either the run is refused before it starts.
 */
export async function openOutput(
  flags: RunFlags & OutputFlags,
  input: RunInput,
  warn: (text: string) => void,
  redo?: KeepSucceededOptions['redo'],
): Promise<RunOutput> {
  const none = new Map<string, readonly string[]>();
  const { output, resume, overwrite } = flags;
  if (resume && overwrite) throw new UsageError('--resume and --overwrite disagree: give one of them');
  if (output === undefined) {
    if (resume) throw new UsageError('--resume needs --output: the results file to take up');
    if (overwrite) throw new UsageError('--overwrite needs --output');
    return {
      store: undefined,
      human: process.stdout,
      kept: undefined,
      earlierCostUsd: 0,
      earlierUnknownUsd: 0,
      redo: none,
      resumed: undefined,
    };
  }
  if (output.trim() === '') throw new UsageError("--output needs a file name, or '-' for standard output");
  if (output === '-') {
    if (resume) throw new UsageError('--resume needs a results file, not standard output');
    return {
      store: JsonlResultStore.to(process.stdout, 'stdout'),
      human: process.stderr,
      kept: undefined,
      earlierCostUsd: 0,
      earlierUnknownUsd: 0,
      redo: none,
      resumed: undefined,
    };
  }
  if (flags.input !== undefined && flags.input !== '-' && (await samePath(output, flags.input))) {
    throw new UsageError(`--output ${output} is the --input file: it would be overwritten`);
  }
  const store = JsonlResultStore.at(output);
  let kept: ReadonlyMap<string, string> | undefined;
  let earlierCostUsd = 0;
  let earlierUnknownUsd = 0;
  let again: ReadonlyMap<string, readonly string[]> = none;
  let resumed: RunOutput['resumed'];
  if (resume) {
    // The lines of articles that did not finish stay (each once) until this run's take their place:
    // their calls were billed, and a run stopped again must not forget them.
    const results = await store.takeUp({ keepUnfinished: true, redo });
    if (results.truncatedLastLine) warn(`warning: ${output}: the last line was cut short (the run was killed mid-write) and is dropped`);
    await checkResume(results.succeeded, input, flags);
    kept = results.succeeded;
    earlierCostUsd = results.spentUsd;
    earlierUnknownUsd = results.unknownUsd;
    again = results.redo;
    const otherTitle = (id: string) => mismatch(output, input.name, `article ${JSON.stringify(id)} has another title there`);
    resumed = (source) => resumedSource(source, results, otherTitle);
  } else if (!overwrite && (await nonEmptyFile(output))) {
    throw new UsageError(`--output ${output} exists and is not empty: --resume to complete that run, --overwrite to replace it`);
  }
  try {
    await store.open({ append: resume });
  } catch (error) {
    throw new UsageError(`--output ${(error as Error).message}`);
  }
  return { store, human: process.stdout, kept, earlierCostUsd, earlierUnknownUsd, redo: again, resumed };
}

/** `Redone: 6 task outputs whose task changed … (summarize 3, sentiment 3)`: what a resume made again, by task. */
export function redoneLine(redone: ReadonlyMap<string, number>): string {
  const total = [...redone.values()].reduce((sum, count) => sum + count, 0);
  const byTask = [...redone].map(([task, count]) => `${task} ${count}`).join(', ');
  return `Redone: ${plural(total, 'task output')} whose task changed since the results file was written, or one it depends on (${byTask})`;
}

/** For input that can be read ahead: every earlier success is an article of this input, or the resume is refused. */
async function checkResume(kept: ReadonlyMap<string, string>, input: RunInput, flags: RunFlags & OutputFlags): Promise<void> {
  const output = flags.output!;
  if (kept.size === 0 || !input.repeatable) return;
  if (flags.input === undefined) {
    for (const [id, title] of kept) {
      const index = /^[1-9]\d*$/.test(id) ? Number(id) : Number.NaN;
      if (!(index <= flags.articles))
        throw mismatch(output, 'the generated articles', `article ${JSON.stringify(id)} is not among --articles=${flags.articles}`);
      if (generatedArticle(index, { seed: flags.seed }).title !== title) {
        throw mismatch(output, 'the generated articles', `article ${JSON.stringify(id)} has another title (another --seed?)`);
      }
    }
    return;
  }
  let seen = 0;
  for await (const article of input.open()) {
    const title = kept.get(article.id);
    if (title === undefined) continue;
    if (title !== article.title) throw mismatch(output, input.name, `article ${JSON.stringify(article.id)} has another title there`);
    seen++;
  }
  if (seen < kept.size) throw mismatch(output, input.name, notInInput(kept.size - seen));
}

/** `1 of its successes is not in the input`, `2 of its successes are …`. */
export function notInInput(missing: number): string {
  return `${missing} of its successes ${missing === 1 ? 'is' : 'are'} not in the input`;
}

export function mismatch(output: string, inputName: string, detail: string): UsageError {
  return new UsageError(`--resume: ${output} is not a run of ${inputName}: ${detail}`);
}

export async function nonEmptyFile(path: string): Promise<boolean> {
  const stats = await stat(path).catch(() => undefined);
  return stats?.isFile() === true && stats.size > 0;
}

/** Whether two paths name the same file (another spelling, a link), as far as the file system says. */
async function samePath(a: string, b: string): Promise<boolean> {
  const real = async (path: string) => realpath(path).catch(() => resolve(path));
  return (await real(a)) === (await real(b));
}
