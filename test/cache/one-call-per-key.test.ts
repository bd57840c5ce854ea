import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../src/clock.ts';
import { OneCallPerKey } from '../../src/cache/one-call-per-key.ts';
import { silentLogger } from '../../src/silent-logger.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import { MemoryCache } from './memory-cache.ts';

/** A call that takes 10 ms and answers with its number. */
function maker(clock: ManualClock) {
  let made = 0;
  const make = async () => {
    const number = ++made;
    await sleep(clock, 10);
    return { response: { output: { answer: number } } };
  };
  return { make, made: () => made };
}

describe('OneCallPerKey', () => {
  it('.call() - a twin that comes after the answer, while the store still writes it, is answered by it: made once', async () => {
    const clock = new ManualClock();
    // The store takes 50 ms to commit a put: a get before then finds nothing.
    const cache = new MemoryCache({ clock, ms: 50 });
    const calls = new OneCallPerKey(cache, silentLogger);
    const { make, made } = maker(clock);
    const first = await drive(clock, calls.call(['k'], undefined, make));
    expect(first.made?.response.output).toEqual({ answer: 1 });
    // 10 ms after the answer, 40 ms before the store has it.
    await clock.advance(10);
    expect(cache.entries.size).toBe(0);
    const twin = await drive(clock, calls.call(['k'], undefined, make));
    expect(made()).toBe(1);
    expect(twin).toEqual({ hit: { output: { answer: 1 } }, key: 'k' });
    // Once written, the store answers: the call under way is let go.
    await clock.advance(50);
    expect(cache.entries.size).toBe(1);
    const later = await drive(clock, calls.call(['k'], undefined, make));
    expect(later.hit).toEqual({ output: { answer: 1 } });
    expect(made()).toBe(1);
  });

  it('.call() - a put that fails lets the next twin make its own call', async () => {
    const clock = new ManualClock();
    const cache = new MemoryCache();
    const calls = new OneCallPerKey(cache, silentLogger);
    const { make, made } = maker(clock);
    cache.failure = new Error('store gone');
    await drive(clock, calls.call(['k'], undefined, make));
    await clock.advance(1);
    cache.failure = undefined;
    const again = await drive(clock, calls.call(['k'], undefined, make));
    expect(again.made?.response.output).toEqual({ answer: 2 });
    expect(made()).toBe(2);
  });

  it('.call() - a twin under another of several keys goes round, not forever, while the answer is being kept under one', async () => {
    const clock = new ManualClock();
    const cache = new MemoryCache({ clock, ms: 50 });
    const calls = new OneCallPerKey(cache, silentLogger);
    const { make, made } = maker(clock);
    // Looked up under a and b, kept under a (the gate that made it).
    await drive(
      clock,
      calls.call(['a', 'b'], undefined, make, () => 'a'),
    );
    const underB = await drive(
      clock,
      calls.call(['b'], undefined, make, () => 'b'),
    );
    expect(underB.made?.response.output).toEqual({ answer: 2 });
    const underA = await drive(
      clock,
      calls.call(['a'], undefined, make, () => 'a'),
    );
    expect(underA.hit).toEqual({ output: { answer: 1 } });
    expect(made()).toBe(2);
  });
});
