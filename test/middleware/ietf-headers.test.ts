import { describe, expect, it } from 'vitest';
import { limitHeaderWriter, retryAfterSeconds } from '../../src/middleware/ietf-headers.ts';
import { parseRateLimitHeaders } from '../../src/vendors/rate-limit-headers.ts';
import type { RateLimitDecision } from '../../src/limiter/keyed-limiter.ts';

const NOW_MS = Date.UTC(2025, 0, 1);
const decision: RateLimitDecision = { allowed: true, limit: 60, remaining: 41, resetMs: 18_200, retryAfterMs: 0 };

describe('limitHeaderWriter()', () => {
  it.each([
    [
      'draft-8: a named policy, quota over the refill window; what is left and seconds to full',
      { draft: 'draft-8', legacy: false, policyName: 'default', rate: 1, burst: 60 },
      { 'RateLimit-Policy': '"default";q=60;w=60', RateLimit: '"default";r=41;t=19' },
    ],
    [
      'draft-7: the dictionary form',
      { draft: 'draft-7', legacy: false, policyName: 'default', rate: 1, burst: 60 },
      { 'RateLimit-Policy': '60;w=60', RateLimit: 'limit=60, remaining=41, reset=19' },
    ],
    [
      'draft-6: the policy, and the limit, what is left and seconds to full in fields of their own',
      { draft: 'draft-6', legacy: false, policyName: 'default', rate: 1, burst: 60 },
      { 'RateLimit-Policy': '60;w=60', 'RateLimit-Limit': '60', 'RateLimit-Remaining': '41', 'RateLimit-Reset': '19' },
    ],
    [
      'legacy only: X-RateLimit-* with the reset as Unix epoch seconds, rounded up',
      { draft: false, legacy: true, policyName: 'default', rate: 1, burst: 60 },
      { 'X-RateLimit-Limit': '60', 'X-RateLimit-Remaining': '41', 'X-RateLimit-Reset': String(NOW_MS / 1000 + 19) },
    ],
    ['none', { draft: false, legacy: false, policyName: 'default', rate: 1, burst: 60 }, {}],
    [
      'a window that is not whole seconds is rounded up; a fractional burst counts whole tokens',
      { draft: 'draft-8', legacy: false, policyName: 'api', rate: 3, burst: 10.5 },
      { 'RateLimit-Policy': '"api";q=10;w=4', RateLimit: '"api";r=41;t=19' },
    ],
    [
      'a bucket that refills at once has no window',
      { draft: 'draft-8', legacy: false, policyName: 'default', rate: Infinity, burst: 5 },
      { 'RateLimit-Policy': '"default";q=5', RateLimit: '"default";r=41;t=19' },
    ],
  ] as const)('%s', (_, options, expected) => {
    expect(limitHeaderWriter(options)(decision, NOW_MS)).toEqual(expected);
  });

  it('writes what the client side reads back: the provider-header parser sees the same figures', () => {
    for (const draft of ['draft-8', 'draft-7', 'draft-6'] as const) {
      const headers = limitHeaderWriter({ draft, legacy: false, policyName: 'default', rate: 1, burst: 60 })(decision, NOW_MS);
      const [status] = parseRateLimitHeaders(headers, { nowMs: NOW_MS }).limits;
      expect(status, draft).toMatchObject({ kind: 'requests', remaining: 41, resetMs: 19_000 });
      if (draft === 'draft-8') expect(status).toMatchObject({ limit: 60, policy: 'default' });
      else expect(status).toMatchObject({ limit: 60 });
    }
  });
});

describe('retryAfterSeconds()', () => {
  it.each([
    [0, 1],
    [1, 1],
    [999, 1],
    [1000, 1],
    [1000.001, 2],
    [59_500, 60],
    [Infinity, undefined],
  ])('%o ms → %o', (ms, seconds) => {
    expect(retryAfterSeconds(ms)).toBe(seconds);
  });
});
