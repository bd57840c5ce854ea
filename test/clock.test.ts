import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.ts';

describe('ManualClock', () => {
  it.each([
    ['new ManualClock(NaN)', () => new ManualClock(Number.NaN), 'Expected startMs to be a finite number, got NaN'],
    ['.set(Infinity)', () => new ManualClock().set(Infinity), 'Expected ms to be a finite number, got Infinity'],
  ])('%s throws a TypeError', (_, call, message) => {
    expect(call).toThrow(new TypeError(message));
  });

  it('.advance() rejects a negative ms with a TypeError', async () => {
    await expect(new ManualClock().advance(-1)).rejects.toThrow(new TypeError('Expected ms to be a number >= 0, got -1'));
  });
});
