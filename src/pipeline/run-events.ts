import type { Clock } from '../clock.ts';
import type { AttemptEvent } from '../gate/attempt.ts';
import type { Budget } from '../quota/budget.ts';
import type { LlmRequest, Provider } from '../provider/provider.ts';
import type { PoolMemberChange } from '../route/pool.ts';
import type { Article } from '../sources/article.ts';
import type { RunSummary } from './metrics.ts';
import type { ArticleResult } from './result.ts';
import type { RunCounts } from './run-tally.ts';

/** An attempt event from a pipeline run: the worker slot that made it is always known. */
export interface PipelineAttemptEvent extends AttemptEvent {
  /** The worker slot that made the attempt, from 0. */
  readonly workerId: number;
}

/** What a run says of itself as it begins. */
export interface RunStart {
  /** `live`: `runPipeline`, a call per attempt; `batch`: `runBatch`, rows through a vendor's Batch API. */
  readonly mode: 'live' | 'batch';
  /** Every provider of the run, by its name as the attempt events give it (a batch run's live fallback, if any). */
  readonly providers: ReadonlyMap<string, Provider>;
  /** The run's money, when it has a budget. */
  readonly budget: Budget | undefined;
  /** The clock the run's instants are read on (`AttemptEvent.sentAtMs`, `atMs`, every event's `atMs`). */
  readonly clock: Clock;
  /** When the run started, on that clock, ms. */
  readonly startMs: number;
  /**
   * The run's counts as they stand — calls by outcome, per provider, task and pool, articles,
   * tokens, money — kept up to date before each event is told: what a progress line, a report or
   * a metrics exporter reads, rather than counting the events again.
   */
  readonly counts: RunCounts;
}

/** What an article's end says beside its result. */
export interface ArticleEnd {
  /** Its critical path: the longest chain of its calls through its task graph, in ms (0 for a batch run's). */
  readonly pathMs: number;
  /** What its answers from the cache cost when they were made, at the prices now, in nano-USD. */
  readonly savedNanoUsd: number;
}

/** A pool member went down, came back or was dropped, and when. */
export interface PoolChange extends PoolMemberChange {
  /** When, on the run's clock, ms. */
  readonly atMs: number;
}

/** A batch's step as a batch run tells it: submitted, then ended and read back. */
export interface BatchEvent {
  /** `submitted` as this run submitted it; `ended` as its results were read back. */
  readonly type: 'submitted' | 'ended';
  /** The provider's id for it. */
  readonly batchId: string;
  /** When, on the run's clock, ms. */
  readonly atMs: number;
  /** Rows in the batch. */
  readonly rows: number;
  /** `submitted`, then the vendor's own word for how it ended (`completed`, `expired`, `cancelled`, …). */
  readonly status: string;
}

/**
 * The budget's moves: `held` — a call's worst case, before it goes; `settled` — a hold, at what
 * the call cost (the rest given back); `spent` — the next call's worst case did not fit what is
 * left, with nothing held that could come back: the run takes no more articles. Amounts in
 * whole nano-dollars, as the budget counts them.
 */
export type BudgetEvent =
  | { readonly type: 'held'; readonly atMs: number; readonly nanoUsd: number }
  | {
      readonly type: 'settled';
      readonly atMs: number;
      readonly heldNanoUsd: number;
      readonly spentNanoUsd: number;
      /** Kept for a call whose fate is unknown (perhaps billed): counted against the budget, apart from what was spent. */
      readonly unknownNanoUsd: number;
    }
  | { readonly type: 'spent'; readonly atMs: number; readonly neededNanoUsd: number };

/** How a run ended. */
export interface RunEnd {
  /**
   * `finished`: its source was done; `interrupted`: the caller's signal stopped it; `stopped`:
   * the run stopped itself (a stop rule, its budget spent) — `stoppedBy` says which.
   */
  readonly ending: 'finished' | 'interrupted' | 'stopped';
  /** With `stopped`: what stopped it (`RunStop.by`: `provider`, `budget`, …). */
  readonly stoppedBy?: string | undefined;
  /** When, on the run's clock, ms. */
  readonly atMs: number;
  /** A live run's figures; a batch run's are `runBatch`'s own (undefined here). */
  readonly summary: RunSummary | undefined;
}

/**
 * Every event of a run, by name, and what its listener is told — one typed map, as BullMQ's
 * `QueueEventsListener`. `runPipeline` and `runBatch` tell the same stream: a live run every
 * event but `batch`, a batch run its start, its articles' results, its batches and its end.
 */
export interface RunEventListeners {
  /** Before the first article. */
  runStarted(run: RunStart): void;
  /** As an article starts, on the worker slot that runs it. */
  articleStarted(article: Article, workerId: number): void;
  /**
   * As an attempt goes to its provider, granted and before any answer (`attempt` is told once it
   * has ended): a call is paid for from here, even if the process dies before it answers.
   */
  send(request: LlmRequest): void;
  /** After every attempt, sent or not. */
  attempt(event: PipelineAttemptEvent): void;
  /** As an article ends, with its result: after its last attempt, before `PipelineOptions.onResult`. */
  result(result: ArticleResult, end: ArticleEnd): void;
  /** A pool member went down, came back, or was dropped (a refused key). */
  poolChange(change: PoolChange): void;
  /** A batch run's batch was submitted, or ended and was read back. */
  batch(event: BatchEvent): void;
  /** The budget held, settled, or could not cover a call. */
  budget(event: BudgetEvent): void;
  /** After the last article. */
  runEnded(end: RunEnd): void;
}

/** The name of a run event. */
export type RunEventName = keyof RunEventListeners;

/**
 * Something that watches a run go — tracing, a report, a progress line — as one object: a
 * listener for each event it cares about ({@link RunEvents.observe}).
 */
export type RunObserver = Partial<RunEventListeners>;

/** One event's listeners: replaced, never changed in place, so a listener that stops listening while the event is told leaves that telling as it was. */
interface Slot<E extends RunEventName> {
  list: readonly RunEventListeners[E][];
}

type Slots = { readonly [E in RunEventName]: Slot<E> };

/**
 * A run's events, told to whoever listens: give one to `runPipeline` or `runBatch` (`events`),
 * listen with {@link on} or {@link observe} before the run starts, and stop with the function they
 * return (cockatiel's `(listener) => dispose`). A listener is called synchronously, in the order
 * it was added, and never awaited: it must not throw, and should return quickly — every attempt
 * of every run is told. What an event's listener reads of the run's counts, it reads from
 * `RunStart.counts`, which is up to date before each event is told. One stream may follow several
 * runs, one after the other.
 */
export class RunEvents {
  readonly #slots: Slots = {
    runStarted: { list: [] },
    articleStarted: { list: [] },
    send: { list: [] },
    attempt: { list: [] },
    result: { list: [] },
    poolChange: { list: [] },
    batch: { list: [] },
    budget: { list: [] },
    runEnded: { list: [] },
  };

  /** Calls `listener` at each `event`; returns a function that stops it. */
  on<E extends RunEventName>(event: E, listener: RunEventListeners[E]): () => void {
    if (!Object.hasOwn(this.#slots, event))
      throw new TypeError(`Expected a run event (${Object.keys(this.#slots).join(', ')}), got "${event}"`);
    if (typeof listener !== 'function') throw new TypeError(`Expected a listener function for "${event}", got ${typeof listener}`);
    const slot = this.#slots[event] as Slot<E>;
    slot.list = [...slot.list, listener];
    let listening = true;
    return () => {
      if (!listening) return;
      listening = false;
      const at = slot.list.indexOf(listener);
      slot.list = [...slot.list.slice(0, at), ...slot.list.slice(at + 1)];
    };
  }

  /** Listens with each listener `observer` has; returns a function that stops them all. */
  observe(observer: RunObserver): () => void {
    const stops: (() => void)[] = [];
    for (const event of Object.keys(this.#slots) as RunEventName[]) {
      const listener = observer[event];
      if (listener !== undefined) stops.push(this.on(event, listener.bind(observer) as never));
    }
    return () => {
      for (const stop of stops) stop();
    };
  }

  /** Whether anything listens to `event`: a run need not make what nobody reads. */
  listens(event: RunEventName): boolean {
    return this.#slots[event].list.length > 0;
  }

  /** Tells every listener of `event`, in the order they were added. */
  emit<E extends RunEventName>(event: E, ...told: Parameters<RunEventListeners[E]>): void;
  emit(event: RunEventName, first?: unknown, second?: unknown): void {
    tell(this.#slots[event] as Slot<RunEventName>, first, second);
  }

  /**
   * A function that tells `event` as {@link emit} does, made once for a run that tells it often:
   * it finds the event's listeners without looking the event up (every attempt of a run is told).
   */
  teller<E extends RunEventName>(event: E): (...told: Parameters<RunEventListeners[E]>) => void;
  teller(event: RunEventName): (first?: unknown, second?: unknown) => void {
    const slot = this.#slots[event] as Slot<RunEventName>;
    return (first, second) => tell(slot, first, second);
  }
}

/** Calls each listener of `slot` with what is told: two arguments at most, passed as they are (a rest array spread into each call is an allocation per attempt). */
function tell(slot: Slot<RunEventName>, first: unknown, second: unknown): void {
  const list = slot.list as readonly ((first: unknown, second: unknown) => void)[];
  for (let i = 0; i < list.length; i++) list[i]!(first, second);
}
