// What a stopped or finished batch run leaves in its result store, taken up by the next.
import { NANO_USD } from '../quota/budget.ts';
import type { KeepSucceededOptions, ResultStore } from '../sinks/result-store.ts';
import type { BatchRunState } from './batch-run-options.ts';

/** What {@link takeUpBatch} found: the state to pass `runBatch` as `resume`, and the outputs its articles keep. */
export interface BatchTakenUp {
  /** The state to resume from: the one saved, or one made from the results when the run ended without one. */
  readonly resume: BatchRunState;
  /** The successes with outputs to make again (their task changed), id → the outputs they keep: their source articles carry them. */
  readonly partial: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /** Those successes, id → the tasks of the outputs made again. */
  readonly redo: ReadonlyMap<string, readonly string[]>;
}

/**
 * Takes up a batch run from `store`: its results (each article once, a result a kill cut short
 * dropped) and the state saved beside them — or, when the run had ended and left none, a state
 * made from the results, what they spent counted. An article with a result has ended — a dead
 * letter is not sent again — unless it is a success with outputs to make again (`redo`, the run
 * plan's): those run again from the outputs they keep. `batchesLost`: the batches in flight ended
 * with the process that submitted them (an in-process Batch API): their rows go again.
 */
export async function takeUpBatch(
  store: ResultStore,
  options: { readonly redo?: KeepSucceededOptions['redo']; readonly batchesLost?: boolean | undefined } = {},
): Promise<BatchTakenUp> {
  const kept = await store.takeUp({ keepUnfinished: true, redo: options.redo });
  const saved = (await store.state.load()) as BatchRunState | undefined;
  let resume: BatchRunState = saved ?? {
    pending: [],
    outputs: {},
    attempts: {},
    ended: [],
    // What calls of unknown fate may have cost counts against the budget as spent does.
    spentNanoUsd: Math.round((kept.spentUsd + kept.unknownUsd) * NANO_USD),
  };
  if (options.batchesLost === true) resume = { ...resume, pending: [] };
  const succeededOnly = <T>(map: ReadonlyMap<string, T>) => new Map([...map].filter(([id]) => !kept.unfinished.has(id)));
  const partial = succeededOnly(kept.partial);
  const redo = succeededOnly(kept.redo);
  // A process killed after writing a result and before saving the state: the result says the article ended.
  const ended = new Set([...resume.ended, ...kept.succeeded.keys(), ...kept.unfinished.keys()]);
  for (const id of [...partial.keys(), ...redo.keys()]) ended.delete(id);
  return { resume: { ...resume, ended: [...ended] }, partial, redo };
}
