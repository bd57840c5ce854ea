import { describe, expect, it } from 'vitest';
import { LatencyEstimate } from '../../src/pipeline/latency-estimate.ts';

describe('LatencyEstimate', () => {
  it('holds the prior guess until a call answers', () => {
    const estimate = new LatencyEstimate(1250);
    expect(estimate.meanMs).toBe(1250);
    expect(estimate.highMs).toBe(1250);
  });

  it('moves the mean from the prior as a plain mean, the prior counting as four calls', () => {
    const estimate = new LatencyEstimate(1000);
    estimate.record(0);
    expect(estimate.meanMs).toBeCloseTo(800, 9); // (4 × 1000 + 0) / 5
    estimate.record(0);
    expect(estimate.meanMs).toBeCloseTo(4000 / 6, 9);
  });

  it('converges on what calls take, then follows it as a moving average', () => {
    const estimate = new LatencyEstimate(2500);
    for (let i = 0; i < 200; i++) estimate.record(10);
    expect(estimate.meanMs).toBeCloseTo(10, 6);
    estimate.record(90);
    expect(estimate.meanMs).toBeCloseTo(20, 6); // 10 + (90 − 10) / 8
  });

  it('learns a high mark as TCP learns a round trip: mean plus two mean deviations', () => {
    const estimate = new LatencyEstimate(5000);
    estimate.record(100);
    expect(estimate.highMs).toBe(200); // 100 + 2 × 50
    estimate.record(100);
    // deviation 50 + (0 − 50) / 4 = 37.5; mean stays 100
    expect(estimate.highMs).toBe(175);
    for (let i = 0; i < 100; i++) estimate.record(100);
    expect(estimate.highMs).toBeCloseTo(100, 6);
  });

  it('puts the high mark above a mean of calls that vary', () => {
    const estimate = new LatencyEstimate(1000);
    for (let i = 0; i < 400; i++) estimate.record(i % 2 === 0 ? 200 : 800);
    expect(estimate.meanMs).toBeGreaterThan(400);
    expect(estimate.meanMs).toBeLessThan(600);
    expect(estimate.highMs).toBeGreaterThan(900);
  });
});
