import { TokenBucket } from 'limiter';

/**
 * The `limiter` npm package's TokenBucket at `rate` tokens/s and capacity `burst`. The package
 * starts its buckets empty; this one is filled first so that every implementation in the bench
 * starts from the same state (full, like x/time/rate and the original Go bucket). Waits go through
 * `removeTokens` (a promise chain that serialises waiters and polls with whole-millisecond
 * `setTimeout`s of at least 1 ms); tries through `tryRemoveTokens`. It has no abort and no clock
 * injection.
 */
export function createPackageBucket(rate: number, burst: number): TokenBucket {
  const bucket = new TokenBucket({ bucketSize: burst, tokensPerInterval: rate, interval: 'second' });
  bucket.content = burst;
  return bucket;
}

/** Ends a capped run: a bucket of size 0 lets everything through, so the queued chain drains at once. */
export function releasePackageBucket(bucket: TokenBucket): void {
  bucket.bucketSize = 0;
}
