/**
 * A small seeded pseudo-random generator (mulberry32), so a simulated run can be replayed exactly.
 *
 * `Math.random()` cannot be seeded; mulberry32 is tiny, fast, passes the usual statistical tests
 * for simulation use, and has a 2^32 period — far more draws than any simulated batch makes.
 * Not for anything security-related.
 */

/**
 * Returns a generator of floats in [0, 1), the same sequence for the same `seed`.
 * `seed` must be an integer; only its low 32 bits matter (so `seed` and `seed + 2 ** 32` agree).
 */
export function createRandom(seed: number): () => number {
  if (!Number.isInteger(seed)) throw new TypeError(`Expected seed to be an integer, got ${String(seed)}`);
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * A seed for `createRandom` drawn from `text` and `seed` (FNV-1a over the text's UTF-16 code
 * units, started from the seed): the same text and seed give the same draws, other texts others.
 */
export function seedFrom(text: string, seed: number): number {
  if (!Number.isInteger(seed)) throw new TypeError(`Expected seed to be an integer, got ${String(seed)}`);
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}
