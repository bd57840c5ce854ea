import { describe, expect, it } from 'vitest';
import { pairSettings, runSweep, settingLabel, type SweepOptions } from '../../src/bench/sweep.ts';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { generateArticles } from '../../src/sources/generated.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';
import { RateLimitError } from '../../src/provider/provider.ts';
import { ScriptedProvider, drive } from '../../src/testing/scripted-provider.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import '../tokenizer-loaded.ts';

describe('pairSettings()', () => {
  it('pairs rates and bursts by position', () => {
    expect(pairSettings([1000, 3, 2], [3, 1, 1])).toEqual([
      { rate: 1000, burst: 3 },
      { rate: 3, burst: 1 },
      { rate: 2, burst: 1 },
    ]);
  });

  it('gives a single burst to every rate, and a single rate to every burst', () => {
    expect(pairSettings([2, 4, Infinity], [1])).toEqual([
      { rate: 2, burst: 1 },
      { rate: 4, burst: 1 },
      { rate: Infinity, burst: 1 },
    ]);
    expect(pairSettings([5], [1, 5])).toEqual([
      { rate: 5, burst: 1 },
      { rate: 5, burst: 5 },
    ]);
  });

  it('with grid, runs every combination, rate by rate', () => {
    expect(pairSettings([5, 10], [1, 2, 3], { grid: true })).toEqual([
      { rate: 5, burst: 1 },
      { rate: 5, burst: 2 },
      { rate: 5, burst: 3 },
      { rate: 10, burst: 1 },
      { rate: 10, burst: 2 },
      { rate: 10, burst: 3 },
    ]);
  });

  it('throws a TypeError for lists of different lengths without grid, saying both lengths', () => {
    expect(() => pairSettings([1, 2, 3], [1, 2])).toThrow(TypeError);
    expect(() => pairSettings([1, 2, 3], [1, 2])).toThrow(/3 rates and 2 bursts/);
  });

  it('drops repeated settings, keeping the first', () => {
    expect(pairSettings([3, 3, 2], [1, 1, 1])).toEqual([
      { rate: 3, burst: 1 },
      { rate: 2, burst: 1 },
    ]);
  });

  it('throws a TypeError for an empty list or a value out of range', () => {
    expect(() => pairSettings([], [1])).toThrow(TypeError);
    expect(() => pairSettings([0], [1])).toThrow(/rate to be > 0/);
    expect(() => pairSettings([Number.NaN], [1])).toThrow(TypeError);
    expect(() => pairSettings([1], [1.5])).toThrow(/burst to be an integer >= 1, got 1.5/);
    expect(() => pairSettings([1], [0])).toThrow(TypeError);
  });
});

describe('settingLabel()', () => {
  it('names a setting as the flags do', () => {
    expect(settingLabel({ rate: 3, burst: 1 })).toBe('rate=3 burst=1');
    expect(settingLabel({ rate: Infinity, burst: 2 })).toBe('rate=inf burst=2');
    expect(settingLabel({ rate: 0.5, burst: 1 })).toBe('rate=0.5 burst=1');
  });
});

/** A sweep on a manual clock: 4 articles, a provider that answers in 2 ms. */
function manualSweep(clock: ManualClock, options: Partial<SweepOptions> = {}) {
  return runSweep({
    settings: [
      { rate: 2, burst: 1 },
      { rate: 4, burst: 3 },
    ],
    repeat: 2,
    createProviders: ({ rate, burst }) => [
      { provider: new ScriptedProvider({ name: 'sim', clock, script: [{ latencyMs: 2 }] }), limits: requestLimit(rate, burst) },
    ],
    createSource: () => generateArticles(4),
    clock,
    ...options,
  });
}

describe('runSweep()', () => {
  it('runs every setting repeat times and reports each run and the medians (manual clock, exact)', async () => {
    const clock = new ManualClock();
    const started: string[] = [];
    const result = await drive(
      clock,
      manualSweep(clock, {
        onRunStart: ({ setting, repeat, run, runs }) => started.push(`${run}/${runs} ${settingLabel(setting)} #${repeat}`),
      }),
    );
    expect(started).toEqual(['1/4 rate=2 burst=1 #1', '2/4 rate=2 burst=1 #2', '3/4 rate=4 burst=3 #1', '4/4 rate=4 burst=3 #2']);
    expect(result.interrupted).toBe(false);
    expect(result.settings.map((s) => s.label)).toEqual(['rate=2 burst=1', 'rate=4 burst=3']);

    const [slow, fast] = result.settings;
    // 8 calls at 2/s after a burst of 1: the last token at (8 − 1) / 2 s, its answer 2 ms later.
    expect(slow!.runs).toHaveLength(2);
    for (const run of slow!.runs) {
      expect(run).toMatchObject({
        calls: 8,
        elapsedMs: 3502,
        rateFloorMs: 3500,
        leastElapsedMs: 3502,
        efficiency: 1,
        rateLimited: 0,
        retries: 0,
        failed: 0,
      });
    }
    expect(slow).toMatchObject({ calls: 8, elapsedMs: { median: 3502, min: 3502, max: 3502 }, rateFloorMs: 3500, efficiency: 1 });
    expect(slow!.grantsMs).toEqual([0, 500, 1000, 1500, 2000, 2500, 3000, 3500]);

    // Burst 3 then 4/s: tokens at 0, 0, 0, then every 250 ms; the floor is (8 − 3) / 4 s.
    expect(fast).toMatchObject({ calls: 8, rateFloorMs: 1250, leastElapsedMs: 1252, elapsedMs: { median: 1252 }, efficiency: 1 });
    expect(fast!.grantsMs).toEqual([0, 0, 0, 250, 500, 750, 1000, 1250]);
  });

  it('keeps every grant within burst + rate·t of the run start (real clock)', async () => {
    const rate = 100;
    const burst = 2;
    const result = await runSweep({
      settings: [{ rate, burst }],
      repeat: 1,
      createProviders: (setting) => [
        {
          provider: new SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 1, clock: systemClock }),
          limits: requestLimit(setting.rate, setting.burst),
        },
      ],
      createSource: () => generateArticles(10),
    });
    const [setting] = result.settings;
    expect(setting!.grantsMs).toHaveLength(20);
    setting!.grantsMs.forEach((atMs, index) => {
      const earliestMs = (Math.max(0, index + 1 - burst) / rate) * 1000;
      expect(atMs, `grant ${index + 1}`).toBeGreaterThanOrEqual(earliestMs - 0.5);
    });
    const run = setting!.runs[0]!;
    expect(run.rateFloorMs).toBe(((20 - burst) / rate) * 1000);
    expect(run.elapsedMs).toBeGreaterThanOrEqual(run.rateFloorMs);
    expect(run.efficiency).toBeGreaterThan(0);
    expect(run.efficiency).toBeLessThanOrEqual(1.05);
  });

  it("reports no floor at rate=inf, and the run as bound by its calls (each 2 ms, one article's two in series)", async () => {
    const clock = new ManualClock();
    const result = await drive(clock, manualSweep(clock, { settings: [{ rate: Infinity, burst: 1 }], repeat: 1 }));
    expect(result.settings[0]).toMatchObject({
      label: 'rate=inf burst=1',
      calls: 8,
      rateFloorMs: 0,
      boundBy: 'latency',
      leastElapsedMs: 4,
    });
    expect(result.settings[0]!.efficiency).toBeGreaterThan(0);
  });

  it("gives counts as the middle run's, whole, and durations as true medians", async () => {
    const clock = new ManualClock();
    let run = 0;
    // The first run meets one 429 (and retries it 100 ms later), the second none.
    const createProviders = ({ rate, burst }: { rate: number; burst: number }) => {
      const script = run++ === 0 ? [{ error: new RateLimitError('429', { retryAfterMs: 100 }) }, { latencyMs: 2 }] : [{ latencyMs: 2 }];
      return [{ provider: new ScriptedProvider({ name: 'sim', clock, script }), limits: requestLimit(rate, burst) }];
    };
    const result = await drive(clock, manualSweep(clock, { settings: [{ rate: Infinity, burst: 1 }], repeat: 2, createProviders }));
    const setting = result.settings[0]!;
    expect(setting.runs.map((r) => [r.rateLimited, r.calls])).toEqual([
      [1, 9],
      [0, 8],
    ]);
    // Lower of the two middle values: whole counts a run really had.
    expect([setting.rateLimited, setting.retries, setting.calls]).toEqual([0, 0, 8]);
    expect(setting.elapsedMs.median).toBe((setting.runs[0]!.elapsedMs + setting.runs[1]!.elapsedMs) / 2);
  });

  it('stops when the signal aborts: the run it cut short and the settings after it are left out', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const result = await drive(
      clock,
      manualSweep(clock, {
        signal: controller.signal,
        onRunStart: ({ run }) => {
          if (run === 2) setTimeout(() => controller.abort(new Error('stop')), 0);
        },
      }),
    );
    expect(result.interrupted).toBe(true);
    expect(result.settings).toHaveLength(1);
    expect(result.settings[0]!.runs.map((r) => r.repeat)).toEqual([1]);
  });

  it('throws a TypeError for no settings or a repeat below 1', async () => {
    const clock = new ManualClock();
    await expect(manualSweep(clock, { settings: [] })).rejects.toThrow(TypeError);
    await expect(manualSweep(clock, { repeat: 0 })).rejects.toThrow(/repeat to be an integer >= 1, got 0/);
  });
});
