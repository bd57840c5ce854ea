import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { KeyedLimiter, type RateLimitDecision, type RateLimitStore } from '../limiter/keyed-limiter.ts';
import { limitHeaderWriter, retryAfterSeconds } from '../middleware/ietf-headers.ts';
import { LocalBudget, type Budget } from '../quota/budget.ts';
import type { TokenUsage } from '../provider/provider.ts';
import type { LimitSpec } from '../quota/provider-limits.ts';
import type { GatewayKey } from './gateway-config.ts';

/** One of the gateway's keys as requests meet it: its budget, its limits (the middleware's buckets), its weight and models. */
export interface KeyState {
  readonly name: string;
  readonly weight: number;
  /** The models it may ask for; undefined for every one. */
  readonly models: ReadonlySet<string> | undefined;
  readonly budget: Budget | undefined;
  readonly limits: readonly KeyLimit[];
  readonly digest: Buffer;
}

/** One limit of a key: its bucket (in this process or in Redis) and the IETF fields it writes. */
export interface KeyLimit {
  readonly spec: LimitSpec;
  readonly store: RateLimitStore;
  readonly headers: (decision: RateLimitDecision, nowEpochMs: number) => Record<string, string>;
}

/** Where a key's budget and buckets live: this process (the default), or Redis for every replica. */
export interface KeyStores {
  budget(key: GatewayKey): Budget;
  bucket(key: GatewayKey, spec: LimitSpec): RateLimitStore;
}

/** A key's budget and buckets in this process. */
export function localKeyStores(clock?: Clock): KeyStores {
  return {
    budget: (key) => new LocalBudget({ maxUsd: key.maxCostUsd! }),
    bucket: (_key, spec) => new KeyedLimiter({ rate: spec.rate, burst: spec.burst, ...(clock === undefined ? {} : { clock }) }),
  };
}

const digestOf = (key: string): Buffer => createHash('sha256').update(key).digest();

/**
 * The gateway's keys, looked up in constant time: the key a request sends is hashed, and its
 * digest compared with every key's (all of them, whatever matches) by `timingSafeEqual`, so the
 * time taken says nothing of how much of a key was right.
 */
export class GatewayKeys {
  readonly #keys: readonly KeyState[];

  constructor(keys: readonly GatewayKey[], stores: KeyStores) {
    this.#keys = keys.map((key) => ({
      name: key.name,
      weight: key.weight,
      models: key.models === undefined ? undefined : new Set(key.models),
      budget: key.maxCostUsd === undefined ? undefined : stores.budget(key),
      digest: digestOf(key.key),
      limits: key.limits.map((spec) => {
        const store = stores.bucket(key, spec);
        return {
          spec,
          store,
          headers: limitHeaderWriter({ draft: 'draft-8', legacy: false, policyName: spec.kind, rate: spec.rate, burst: spec.burst }),
        };
      }),
    }));
  }

  get all(): readonly KeyState[] {
    return this.#keys;
  }

  /** The key `sent` is, or undefined. */
  find(sent: string): KeyState | undefined {
    const digest = digestOf(sent);
    let found: KeyState | undefined;
    for (const key of this.#keys) if (timingSafeEqual(digest, key.digest) && found === undefined) found = key;
    return found;
  }
}

/** A key's limits taken for one request: passed with their headers, or refused with how long to wait. */
export type LimitVerdict =
  | {
      readonly allowed: true;
      readonly headers: Record<string, string>;
      /**
       * Gives back to the key's token limits what the request took beyond `usage` (its worst case
       * taken before the call): the tokens it used, or none when no upstream answered.
       */
      readonly settle?: ((usage: TokenUsage) => void) | undefined;
    }
  | { readonly allowed: false; readonly headers: Record<string, string>; readonly retryAfterMs: number; readonly kind: string };

/**
 * Takes a request's cost from each of the key's limits (a request; its worst-case tokens on a token
 * limit), the middleware's way: at once, never waiting. Refused by the first that cannot take it.
 */
export async function takeKeyLimits(key: KeyState, tokens: { input: number; output: number }): Promise<LimitVerdict> {
  const headers: Record<string, string> = {};
  let tokenLimits: KeyLimit[] | undefined;
  for (const limit of key.limits) {
    const { kind } = limit.spec;
    const amount =
      kind === 'requests'
        ? 1
        : kind === 'input-tokens'
          ? tokens.input
          : kind === 'output-tokens'
            ? tokens.output
            : tokens.input + tokens.output;
    const decision = await limit.store.take(key.name, amount);
    const written = limit.headers(decision, Date.now());
    for (const [name, value] of Object.entries(written)) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    if (!decision.allowed) {
      const seconds = retryAfterSeconds(decision.retryAfterMs);
      if (seconds !== undefined) headers['retry-after'] = String(seconds);
      // What the limits before this one took is given back: the request is not made.
      if (tokenLimits !== undefined) for (const taken of tokenLimits) giveBack(key.name, taken, tokens, NO_USAGE);
      return { allowed: false, headers, retryAfterMs: decision.retryAfterMs, kind };
    }
    if (kind !== 'requests' && limit.store.give !== undefined) {
      tokenLimits ??= [];
      tokenLimits.push(limit);
    }
  }
  if (tokenLimits === undefined) return { allowed: true, headers };
  const settled = tokenLimits;
  return {
    allowed: true,
    headers,
    settle: (usage) => {
      for (const limit of settled) giveBack(key.name, limit, tokens, usage);
    },
  };
}

const NO_USAGE: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/** Gives back to one token limit what a request took of it beyond `usage`; a store that fails keeps it (the safe side). */
function giveBack(name: string, limit: KeyLimit, taken: { input: number; output: number }, usage: TokenUsage): void {
  const { kind } = limit.spec;
  const over =
    kind === 'input-tokens'
      ? taken.input - usage.inputTokens
      : kind === 'output-tokens'
        ? taken.output - usage.outputTokens
        : taken.input + taken.output - usage.inputTokens - usage.outputTokens;
  if (over > 0) void Promise.resolve(limit.store.give!(name, over)).catch(() => {});
}
