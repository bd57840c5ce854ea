import type { ArticleResult } from '../pipeline/result.ts';
import type { KeepSucceededOptions, KeptResults, ResultStore, RunStateSlot } from './result-store.ts';
import { NONE, TakeUpTally, toNano, type ArticleResults } from './take-up.ts';
import { NANO_USD } from '../quota/budget.ts';

/**
 * Results kept in this process, in the order they ended — as a results file holds them, taken up
 * by the same rules — and a run's state beside them (copied on save, as a file would hold it). For
 * tests of code that runs and resumes, and for results read back in the same process. Not shared
 * between processes, and gone with this one.
 */
export class MemoryResultStore implements ResultStore {
  readonly name: string;
  readonly state: RunStateSlot;
  readonly #results: ArticleResult[];
  #written = 0;

  /** A store holding `results` (an earlier run's, to take up), named `name` in messages. */
  constructor(options: { readonly results?: readonly ArticleResult[] | undefined; readonly name?: string | undefined } = {}) {
    this.name = options.name ?? 'memory';
    this.#results = [...(options.results ?? [])];
    this.state = new MemoryStateSlot(`${this.name} state`);
  }

  /** What it holds, in order. */
  get results(): readonly ArticleResult[] {
    return this.#results;
  }

  get written(): number {
    return this.#written;
  }

  async takeUp(options: KeepSucceededOptions = {}): Promise<KeptResults> {
    const keepUnfinished = options.keepUnfinished === true;
    const last = new Map<string, ArticleResults & { readonly index: number }>();
    for (const [index, result] of this.#results.entries()) {
      const outputs = result.outputs ?? {};
      const again = options.redo?.({ id: result.id, outputs, fingerprints: result.fingerprints }) ?? NONE;
      const before = last.get(result.id);
      last.set(result.id, {
        id: result.id,
        index,
        results: (before?.results ?? 0) + 1,
        costNanoUsd: (before?.costNanoUsd ?? 0) + toNano(result.costUsd),
        unknownNanoUsd: (before?.unknownNanoUsd ?? 0) + toNano(result.unknownCostUsd),
        status: result.status,
        title: result.title ?? '',
        again,
        dropping: again.length === 0 ? NONE : again.filter((task) => Object.hasOwn(outputs, task)),
      });
    }
    const tally = new TakeUpTally(keepUnfinished);
    const kept: ArticleResult[] = [];
    for (const article of [...last.values()].sort((a, b) => a.index - b.index)) {
      const result = this.#results[article.index]!;
      const { keep, costNanoUsd, unknownNanoUsd = 0 } = tally.add(article, () => result.outputs ?? {});
      if (!keep) continue;
      kept.push(
        costNanoUsd === undefined || (toNano(result.costUsd) === costNanoUsd && toNano(result.unknownCostUsd) === unknownNanoUsd)
          ? result
          : withCosts(result, costNanoUsd, unknownNanoUsd),
      );
    }
    this.#results.splice(0, this.#results.length, ...kept);
    return tally.kept(false);
  }

  async write(result: ArticleResult): Promise<void> {
    this.#results.push(result);
    this.#written++;
  }

  async compact(): Promise<void> {
    await this.takeUp({ keepUnfinished: true });
  }

  async close(): Promise<void> {}
}

/** A value held as a copy of what was saved: a later change to the object saved does not reach it. */
class MemoryStateSlot implements RunStateSlot {
  readonly name: string;
  #saved: string | undefined;

  constructor(name: string) {
    this.name = name;
  }

  async load(): Promise<unknown> {
    return this.#saved === undefined ? undefined : (JSON.parse(this.#saved) as unknown);
  }

  async save(state: object): Promise<void> {
    this.#saved = JSON.stringify(state);
  }

  async clear(): Promise<void> {
    this.#saved = undefined;
  }
}

/** `result` with the sums of its article's results: what was spent, and what calls of unknown fate may have cost (absent at 0). */
function withCosts(result: ArticleResult, costNanoUsd: number, unknownNanoUsd: number): ArticleResult {
  const { unknownCostUsd: _, ...rest } = result;
  return { ...rest, costUsd: costNanoUsd / NANO_USD, ...(unknownNanoUsd > 0 && { unknownCostUsd: unknownNanoUsd / NANO_USD }) };
}
