/** A request rate in force from an instant on. */
export interface RateSince {
  /** The instant, a clock reading in ms. */
  readonly atMs: number;
  /** The rate from then on, in calls per second. */
  readonly rate: number;
}

/** Moves kept before two neighbours are merged into one: the memory of a run does not grow with its calls. */
const MAX_MOVES = 1024;

/**
 * The moves of a request rate over a run (the adaptive rate moves it after every call), in memory
 * that does not grow with them: past {@link MAX_MOVES}, each pair of neighbouring moves becomes one
 * at the higher of their two rates — which allows more grants, never fewer, so that a floor read
 * from it stays a true lower bound.
 */
export class RateHistory {
  #moves: RateSince[];

  constructor(atMs: number, rate: number) {
    this.#moves = [{ atMs, rate }];
  }

  /** The rate from `atMs` on (no earlier than the last move). */
  record(atMs: number, rate: number): void {
    const last = this.#moves.at(-1)!;
    if (rate === last.rate) return;
    if (atMs <= last.atMs) {
      // Moves at one instant: the higher stands, which allows more grants, never fewer.
      this.#moves[this.#moves.length - 1] = { atMs: last.atMs, rate: Math.max(rate, last.rate) };
      return;
    }
    this.#moves.push({ atMs, rate });
    if (this.#moves.length > MAX_MOVES) this.#moves = halve(this.#moves);
  }

  /** The moves, oldest first. */
  get moves(): readonly RateSince[] {
    return this.#moves;
  }
}

function halve(moves: readonly RateSince[]): RateSince[] {
  const merged: RateSince[] = [];
  for (let i = 0; i < moves.length; i += 2) {
    const next = moves[i + 1];
    merged.push({ atMs: moves[i]!.atMs, rate: next === undefined ? moves[i]!.rate : Math.max(moves[i]!.rate, next.rate) });
  }
  return merged;
}

/**
 * The earliest instant, in ms after `startMs`, by which a token bucket of `burst` refilling at
 * the rates of `moves` can have granted `calls` tokens: it holds at most `burst` at `startMs` and
 * gains at most `∫ rate dt` after, so no schedule grants the last token sooner. 0 when the burst
 * covers them; `Infinity` when the rates never allow them.
 */
export function rateFloorMs(moves: readonly RateSince[], startMs: number, calls: number, burst: number): number {
  let owed = calls - burst;
  if (owed <= 0) return 0;
  for (let i = 0; i < moves.length; i++) {
    const { rate } = moves[i]!;
    const fromMs = Math.max(startMs, moves[i]!.atMs);
    const untilMs = i + 1 < moves.length ? Math.max(startMs, moves[i + 1]!.atMs) : Infinity;
    if (rate === Infinity) return fromMs - startMs;
    const tokens = (rate * (untilMs - fromMs)) / 1000;
    if (tokens >= owed) return fromMs - startMs + (owed * 1000) / rate;
    owed -= tokens;
  }
  return Infinity;
}
