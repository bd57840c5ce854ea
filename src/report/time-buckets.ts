import { checkDurationMs, checkInteger, checkNumber } from '../validation/checks.ts';

/** How a column's buckets combine when two become one: counts add up, a gauge keeps its peak. */
export type BucketMerge = 'sum' | 'max';

/** One series of a {@link TimeBuckets}: a value per bucket. */
export interface BucketColumn {
  readonly key: string;
  readonly merge: BucketMerge;
  /** Adds `value` to the bucket that holds `atMs` (a `sum` column). */
  add(atMs: number, value?: number): void;
  /** Raises the bucket that holds `atMs` to `value` if it is lower (a `max` column). */
  raise(atMs: number, value: number): void;
  /** Raises every bucket from the one that holds `fromMs` to the one that holds `toMs` (a gauge that held `value` all along). */
  raiseSpan(fromMs: number, toMs: number, value: number): void;
}

/**
 * Time series in fixed memory: every column holds at most `maxBuckets` values, one per bucket of
 * `bucketMs` from `startMs`. When a reading lands past the last bucket, every bucket doubles in
 * width, pairs merging (counts added, gauges at their peak): an hour's run and a minute's take the
 * same memory, the long one at a coarser grain. Readings before `startMs` count in the first bucket.
 */
export class TimeBuckets {
  readonly startMs: number;
  readonly maxBuckets: number;
  #bucketMs: number;
  /** Buckets in use: one past the last bucket a reading landed in. */
  #length = 0;
  readonly #columns = new Map<string, { column: BucketColumn; values: Float64Array }>();

  constructor(startMs: number, bucketMs: number, maxBuckets: number) {
    checkNumber('startMs', startMs);
    checkDurationMs('bucketMs', bucketMs, { positive: true });
    checkInteger('maxBuckets', maxBuckets, 2);
    this.startMs = startMs;
    this.#bucketMs = bucketMs;
    this.maxBuckets = maxBuckets;
  }

  /** The width of a bucket now, in ms: the first width, doubled as often as the run's length asked. */
  get bucketMs(): number {
    return this.#bucketMs;
  }

  /** Buckets in use. */
  get length(): number {
    return this.#length;
  }

  /** The column named `key`, made on first use. */
  column(key: string, merge: BucketMerge): BucketColumn {
    const found = this.#columns.get(key);
    if (found !== undefined) return found.column;
    const values = new Float64Array(this.maxBuckets);
    const column: BucketColumn = {
      key,
      merge,
      add: (atMs, value = 1) => {
        values[this.#indexOf(atMs)]! += value;
      },
      raise: (atMs, value) => {
        const index = this.#indexOf(atMs);
        if (value > values[index]!) values[index] = value;
      },
      raiseSpan: (fromMs, toMs, value) => {
        // The last index first: it may widen the buckets, which moves the first.
        const last = this.#indexOf(toMs);
        for (let index = this.#indexOf(Math.min(fromMs, toMs)); index <= last; index++) {
          if (value > values[index]!) values[index] = value;
        }
      },
    };
    this.#columns.set(key, { column, values });
    return column;
  }

  /** The columns' keys, in the order they were made. */
  keys(): string[] {
    return [...this.#columns.keys()];
  }

  /** A copy of the values of `key` in the buckets in use (zeros for a column never made). */
  values(key: string): number[] {
    const found = this.#columns.get(key);
    return found === undefined ? new Array<number>(this.#length).fill(0) : Array.from(found.values.subarray(0, this.#length));
  }

  /** Makes the buckets reach `atMs`, so that a quiet end of the run shows as zeros rather than not at all. */
  reach(atMs: number): void {
    this.#indexOf(atMs);
  }

  /** The bucket that holds `atMs`, the buckets widened first when it lies past the last. */
  #indexOf(atMs: number): number {
    let index = Math.max(0, Math.floor((atMs - this.startMs) / this.#bucketMs));
    while (index >= this.maxBuckets) {
      this.#coarsen();
      index = Math.floor(index / 2);
    }
    if (index >= this.#length) this.#length = index + 1;
    return index;
  }

  #coarsen(): void {
    this.#bucketMs *= 2;
    for (const { column, values } of this.#columns.values()) {
      for (let to = 0; to < values.length / 2; to++) {
        const a = values[2 * to]!;
        const b = values[2 * to + 1] ?? 0;
        values[to] = column.merge === 'sum' ? a + b : Math.max(a, b);
      }
      values.fill(0, Math.ceil(values.length / 2));
    }
    this.#length = Math.ceil(this.#length / 2);
  }
}
