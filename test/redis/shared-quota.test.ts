import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeExcess, runSharedQuota, stray429s } from './shared-quota.ts';
import { startRedis, type TestRedis } from './redis-server.ts';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

describe('a quota shared through Redis by three processes', () => {
  it('holds burst + rate·t in every window, sends 180 calls at 30/s within 5 % of the floor, and draws no 429 from an equal quota', async () => {
    const rate = 30;
    const burst = 3;
    const run = await runSharedQuota({
      redisUrl: redis.url,
      processes: 3,
      articlesPerProcess: 30,
      workersPerProcess: 4,
      rate,
      burst,
      serverQuota: { rate, burst },
      quotaKey: 'precision',
    });
    expect(run.refused).toBeLessThanOrEqual(stray429s(180));
    expect(run.arrivedAtMs).toHaveLength(180 + run.refused);
    for (const summary of run.summaries) expect([summary.succeeded, summary.failed]).toEqual([30, 0]);
    expect(run.summaries.reduce((sum, summary) => sum + summary.rateLimited, 0)).toBe(run.refused);
    // Judged by when each call left, on the clock the processes share: on a loaded machine the
    // server's own reading of an arrival lags by up to a couple of hundred ms (a process waiting
    // for a core), bunching calls that left evenly. One token of loopback jitter, as the issue allows.
    expect(envelopeExcess(run.sentAtMs, rate, burst)).toBeLessThanOrEqual(1);
    const floorMs = ((180 - burst) / rate) * 1000;
    const spanMs = run.sentAtMs.at(-1)! - run.sentAtMs[0]!;
    expect(spanMs).toBeGreaterThanOrEqual(floorMs - 1000 / rate);
    expect(spanMs).toBeLessThanOrEqual(floorMs * 1.05);
  }, 60_000);
});
