/**
 * How durations spread, in a few fixed bins on a 1-2-5 scale (under 1 ms, 1–2 ms, 2–5 ms, …, an
 * hour and more): what a chart of a run's latencies or waits needs, in constant memory however
 * many calls the run makes. The exact percentiles are the summary's (its histograms are finer).
 */
export class Distribution {
  /** The bins' lower edges, ms: 0, then 1, 2, 5, 10, … up to an hour. */
  static readonly EDGES_MS: readonly number[] = Object.freeze(
    [0, ...[0, 1, 2, 3, 4, 5, 6].flatMap((power) => [1, 2, 5].map((step) => step * 10 ** power))].filter((edge) => edge <= 3_600_000),
  );
  readonly #counts = new Float64Array(Distribution.EDGES_MS.length);
  #count = 0;

  get count(): number {
    return this.#count;
  }

  record(valueMs: number): void {
    if (!(valueMs >= 0)) return;
    const edges = Distribution.EDGES_MS;
    let bin = edges.length - 1;
    while (edges[bin]! > valueMs) bin--;
    this.#counts[bin]!++;
    this.#count++;
  }

  /** Each bin from the first to the last that holds a value, with its edges and count (none when empty). */
  bins(): { readonly fromMs: number; readonly toMs: number; readonly count: number }[] {
    const edges = Distribution.EDGES_MS;
    const used = [...this.#counts.keys()].filter((bin) => this.#counts[bin]! > 0);
    if (used.length === 0) return [];
    const bins = [];
    for (let bin = used[0]!; bin <= used.at(-1)!; bin++) {
      bins.push({ fromMs: edges[bin]!, toMs: edges[bin + 1] ?? Infinity, count: this.#counts[bin]! });
    }
    return bins;
  }
}
