// A resumed run's articles: the source as a store's take-up leaves it to do.
import type { ArticleResult } from '../pipeline/result.ts';
import type { Article } from '../sources/article.ts';
import type { KeptResults } from './result-store.ts';

/** The articles a resumed run still has to do ({@link resumedSource}), and what it skipped. */
export interface ResumedSource {
  readonly source: AsyncIterable<Article>;
  /** The articles skipped so far: those that had succeeded. */
  resumed(): number;
  /** After the source is read: how many of the successes kept it never held (a stream cannot be checked ahead). */
  unseen(): number;
}

/**
 * `source` as a resumed run takes it: without the articles that succeeded before (`kept.succeeded`),
 * checking as it goes that each is the same article — its title, else the source fails with
 * `otherTitle(id)` — and the others with the outputs they keep (`kept.partial`), so that only
 * their missing tasks run.
 */
export function resumedSource(
  source: Iterable<Article> | AsyncIterable<Article>,
  kept: Pick<KeptResults, 'succeeded' | 'partial'>,
  otherTitle: (id: string) => Error,
): ResumedSource {
  let resumed = 0;
  return {
    source: (async function* () {
      for await (const article of source) {
        const title = kept.succeeded.get(article.id);
        if (title === undefined) {
          const outputs = kept.partial.get(article.id);
          yield outputs === undefined ? article : { ...article, outputs };
          continue;
        }
        if (title !== article.title) throw otherTitle(article.id);
        resumed++;
      }
    })(),
    resumed: () => resumed,
    unseen: () => kept.succeeded.size - resumed,
  };
}

/** `source`, the articles of `outputs` with the outputs they keep (their other tasks run). */
export async function* withKeptOutputs(
  source: Iterable<Article> | AsyncIterable<Article>,
  outputs: ReadonlyMap<string, Readonly<Record<string, unknown>>>,
): AsyncGenerator<Article> {
  for await (const article of source) {
    const kept = outputs.get(article.id);
    yield kept === undefined ? article : { ...article, outputs: kept };
  }
}

/**
 * Adds to `into` (task → count) the outputs of `result` a resumed run made again because their
 * task changed since its earlier result (`redo`, a take-up's): those it ended with.
 */
export function countRedone(redo: ReadonlyMap<string, readonly string[]>, result: ArticleResult, into: Map<string, number>): void {
  for (const task of redo.get(result.id) ?? []) {
    if (Object.hasOwn(result.outputs, task)) into.set(task, (into.get(task) ?? 0) + 1);
  }
}
