// The entries the crash test writes: each one can be checked whole against its number.
import type { CachedAnswer } from '../../src/cache/answer-cache.ts';

export function entryFor(n: number): CachedAnswer {
  return {
    output: { n, text: `answer ${n} `.repeat(50), keywords: [String(n), String(n * 7)] },
    usage: { inputTokens: n, outputTokens: n + 1 },
  };
}
