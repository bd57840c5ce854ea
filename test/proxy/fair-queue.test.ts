// The fair queue in front of a route's limits, on a manual clock: a flood from one key does not hold another back beyond its share.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { FairQueue } from '../../src/proxy/index.ts';
import { LocalLimits } from '../../src/quota/local-limits.ts';

const ONE_REQUEST = { requests: 1, inputTokens: 0, outputTokens: 0 };

/** Sends `count` requests of `flow` through `queue` into `limits`, recording each grant's instant. */
function flood(
  queue: FairQueue,
  limits: LocalLimits,
  clock: ManualClock,
  flow: string,
  weight: number,
  count: number,
  grants: { flow: string; atMs: number }[],
) {
  return Array.from({ length: count }, () =>
    queue.take(flow, weight, 1, async () => {
      await limits.acquire(ONE_REQUEST);
      grants.push({ flow, atMs: clock.now() });
    }),
  );
}

async function run(weights: { a: number; b: number }) {
  const clock = new ManualClock();
  // The upstream: one request a second, one at once.
  const limits = new LocalLimits({ limits: [{ kind: 'requests', rate: 1, burst: 1 }], clock });
  const queue = new FairQueue();
  const grants: { flow: string; atMs: number }[] = [];
  const a = flood(queue, limits, clock, 'a', weights.a, 40, grants);
  // Key b arrives once a's flood is queued.
  await clock.advance(0);
  const b = flood(queue, limits, clock, 'b', weights.b, 10, grants);
  for (let second = 0; second < 60; second++) await clock.advance(1000);
  await Promise.all([...a, ...b]);
  return grants;
}

describe('FairQueue', () => {
  it('take: serves two keys of equal weight in turn, whatever one of them floods', async () => {
    const grants = await run({ a: 1, b: 1 });
    const b = grants.filter((grant) => grant.flow === 'b').map((grant) => grant.atMs);
    expect(b).toHaveLength(10);
    // b's 10 requests come within its half of the first ~21 seconds, not after a's 40.
    expect(Math.max(...b)).toBeLessThanOrEqual(21_000);
    // Every second the upstream grants one request: the rate is not exceeded by the queue.
    const instants = grants.map((grant) => grant.atMs);
    for (let index = 1; index < instants.length; index++) expect(instants[index]! - instants[index - 1]!).toBeGreaterThanOrEqual(1000);
  });

  it('take: shares the upstream in proportion to weight', async () => {
    const grants = await run({ a: 1, b: 3 });
    // While both wait, b gets three of every four grants: its 10 are done within ~14 grants.
    const lastB = grants.findLastIndex((grant) => grant.flow === 'b');
    expect(lastB).toBeLessThanOrEqual(14);
    expect(lastB).toBeGreaterThanOrEqual(10);
  });

  it('take: an aborted waiter leaves the queue, rejecting with the reason', async () => {
    const queue = new FairQueue();
    let release!: () => void;
    const first = queue.take('a', 1, 1, () => new Promise<void>((resolve) => (release = resolve)));
    const abort = new AbortController();
    const second = queue.take('a', 1, 1, async () => 'served', abort.signal);
    abort.abort(new Error('client went away'));
    await expect(second).rejects.toThrow('client went away');
    expect(queue.size).toBe(0);
    release();
    await first;
  });
});
