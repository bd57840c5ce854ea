import { TokenBucket } from '../../src/limiter/token-bucket.ts';
import { NaiveGoBucket } from '../baselines/naive-go-bucket.ts';
import { createPackageBucket, releasePackageBucket } from '../baselines/limiter-package.ts';

export const IMPLEMENTATIONS = ['ours', 'naive', 'limiter'] as const;
export type ImplementationId = (typeof IMPLEMENTATIONS)[number];

export const LABELS: Record<ImplementationId, string> = {
  ours: 'ours (src/limiter/token-bucket.ts)',
  naive: 'naive (literal port of the original Go bucket)',
  limiter: 'limiter@4.1.0 TokenBucket',
};

/**
 * One limiter as the timing scenarios drive it. (The throughput loops call each implementation
 * directly instead, so no adapter call sits in what they measure.)
 */
export interface Subject {
  /** Resolves when one token is granted; rejects with the signal's reason on abort. */
  acquire(signal?: AbortSignal): Promise<unknown>;
  /** Bench only: lets every waiter through at once, to end a capped or memory-only run. */
  release(): void;
  readonly supportsAbort: boolean;
}

export function createSubject(id: ImplementationId, rate: number, burst: number): Subject {
  switch (id) {
    case 'ours': {
      const bucket = new TokenBucket({ rate, burst });
      return {
        acquire: (signal) => (signal === undefined ? bucket.acquire() : bucket.acquire(1, { signal })),
        release: () => bucket.setRate(Infinity),
        supportsAbort: true,
      };
    }
    case 'naive': {
      const bucket = new NaiveGoBucket(rate, burst);
      return {
        acquire: (signal) => bucket.acquire(signal),
        release: () => {
          bucket.tokens = Infinity;
          bucket.maxTokens = Infinity;
          bucket.refillRate = 0;
        },
        supportsAbort: true,
      };
    }
    case 'limiter': {
      const bucket = createPackageBucket(rate, burst);
      return {
        acquire: (signal) => {
          if (signal !== undefined) throw new TypeError('the limiter package cannot abort a wait');
          return bucket.removeTokens(1);
        },
        release: () => releasePackageBucket(bucket),
        supportsAbort: false,
      };
    }
  }
}
