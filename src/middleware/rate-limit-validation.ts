import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { KeyedLimiter, type RateLimitStore } from '../limiter/keyed-limiter.ts';
import { silentLogger } from '../silent-logger.ts';
import {
  checkBoolean,
  checkFunction,
  checkInteger,
  checkNumber,
  checkObject,
  checkOneOf,
  checkString,
  expected,
} from '../validation/checks.ts';
import type { ClientAddressOptions } from './client-address.ts';
import { RATE_LIMIT_HEADER_DRAFTS, type RateLimitHeaderDraft } from './ietf-headers.ts';
import {
  type LimitedRequest,
  type MaybePromise,
  type MetricsRegistry,
  RATE_LIMIT_DEFAULTS,
  type RateLimitMessage,
  type RateLimitOptions,
  STORE_ERROR_ACTIONS,
  type StoreErrorAction,
} from './rate-limit-options.ts';

/** The options as `rateLimit()` runs them: each alias resolved, every default applied, all checked. */
export interface ResolvedRateLimitOptions<Req extends IncomingMessage> {
  readonly store: RateLimitStore;
  /** Undefined: the client's address. */
  readonly key: ((req: Req, res: ServerResponse) => MaybePromise<string>) | undefined;
  /** The name `key` was given under, for the errors its answers raise. */
  readonly keyName: 'key' | 'keyGenerator';
  readonly cost: number | ((req: Req, res: ServerResponse) => MaybePromise<number>);
  readonly skip: ((req: Req, res: ServerResponse) => MaybePromise<boolean>) | undefined;
  readonly headers: RateLimitHeaderDraft | false;
  readonly legacyHeaders: boolean;
  readonly policyName: string;
  readonly message: RateLimitMessage | ((req: Req, limited: LimitedRequest) => MaybePromise<RateLimitMessage>);
  readonly statusCode: number;
  readonly handler: ((req: Req, res: ServerResponse, limited: LimitedRequest) => void) | undefined;
  readonly requestPropertyName: string;
  readonly onStoreError: StoreErrorAction;
  readonly registry: MetricsRegistry | undefined;
  readonly logger: Logger;
  readonly clientAddress: Omit<ClientAddressOptions, 'logger'>;
}

const TAKEN_BEFORE_THE_RESPONSE = 'a token bucket takes before the response exists: give such requests cost 0, or skip them';

/**
 * express-rate-limit options with no counterpart here, and why: passed on from a config written
 * for it, each would otherwise be ignored without a word.
 */
const NOT_OFFERED: Readonly<Record<string, string>> = {
  skipSuccessfulRequests: TAKEN_BEFORE_THE_RESPONSE,
  skipFailedRequests: TAKEN_BEFORE_THE_RESPONSE,
  requestWasSuccessful: TAKEN_BEFORE_THE_RESPONSE,
  retryAfter: "Retry-After is the bucket's own wait, in whole seconds",
  validate: 'the options are checked once, here, and a mistake throws',
};

/** Checks `options` and applies the defaults: the one place either happens. */
export function resolveRateLimitOptions<Req extends IncomingMessage>(options: RateLimitOptions<Req>): ResolvedRateLimitOptions<Req> {
  checkObject('options', options);
  checkNotOffered(options);
  const {
    cost = RATE_LIMIT_DEFAULTS.cost,
    skip,
    legacyHeaders = RATE_LIMIT_DEFAULTS.legacyHeaders,
    message = RATE_LIMIT_DEFAULTS.message,
    statusCode = RATE_LIMIT_DEFAULTS.statusCode,
    handler,
    requestPropertyName = RATE_LIMIT_DEFAULTS.requestPropertyName,
    registry,
    logger = silentLogger,
  } = options;
  const store = storeOf(options);
  const key = oneOf(options, 'key', 'keyGenerator');
  if (key !== undefined) checkFunction(key.name, key.value);
  if (typeof cost === 'number') checkNumber('cost', cost, { min: 0 });
  else checkFunction('cost', cost);
  if (skip !== undefined) checkFunction('skip', skip);
  checkBoolean('legacyHeaders', legacyHeaders);
  checkMessage(message);
  checkInteger('statusCode', statusCode, 400, 599);
  if (handler !== undefined) checkFunction('handler', handler);
  checkString('requestPropertyName', requestPropertyName);
  if (registry !== undefined) checkObject('registry', registry);
  checkLogger(logger);
  return {
    store,
    key: key?.value,
    keyName: key?.name ?? 'key',
    cost,
    skip,
    headers: headersOf(options),
    legacyHeaders,
    policyName: policyNameOf(options),
    message,
    statusCode,
    handler,
    requestPropertyName,
    onStoreError: onStoreErrorOf(options),
    registry,
    logger,
    clientAddress: { trustProxy: options.trustProxy, ipv6Subnet: options.ipv6Subnet, proxyHeader: options.proxyHeader },
  };
}

function checkNotOffered(options: object): void {
  for (const name in NOT_OFFERED) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined) throw expected(name, `left out (${NOT_OFFERED[name]})`, value);
  }
}

/** One option under two names, ours and express-rate-limit's: either, not both. */
function oneOf<Options, Ours extends keyof Options & string, Theirs extends keyof Options & string>(
  options: Options,
  ours: Ours,
  theirs: Theirs,
): { readonly name: Ours | Theirs; readonly value: Exclude<Options[Ours] | Options[Theirs], undefined> } | undefined {
  const mine = options[ours];
  const other = options[theirs];
  if (mine !== undefined && other !== undefined) throw expected(theirs, `left out with ${ours} (they are one option)`, other);
  if (mine !== undefined) return { name: ours, value: mine as Exclude<Options[Ours], undefined> };
  if (other !== undefined) return { name: theirs, value: other as Exclude<Options[Theirs], undefined> };
  return undefined;
}

/** A given store, or a `KeyedLimiter` of `rate` and `burst`, or of `limit` per `windowMs`: one of the three. */
function storeOf(options: RateLimitOptions<never>): RateLimitStore {
  const { rate, burst, windowMs } = options;
  const limiter = oneOf(options, 'limiter', 'store');
  const limit = oneOf(options, 'limit', 'max');
  const byWindow = limit !== undefined || windowMs !== undefined;
  if (limiter !== undefined) {
    if (rate !== undefined || burst !== undefined) {
      throw expected('rate and burst', `left out with a ${limiter.name} (it has its own)`, { rate, burst });
    }
    if (byWindow) {
      throw expected('limit and windowMs', `left out with a ${limiter.name} (it has its own)`, { limit: limit?.value, windowMs });
    }
    return checkStore(limiter.name, limiter.value);
  }
  if (byWindow) {
    if (rate !== undefined || burst !== undefined) {
      throw expected('rate and burst', 'left out with limit and windowMs (a quota per window is the bucket)', { rate, burst });
    }
    const quota = limit?.value ?? RATE_LIMIT_DEFAULTS.burst;
    const spanMs = windowMs ?? RATE_LIMIT_DEFAULTS.windowMs;
    checkInteger(limit?.name ?? 'limit', quota, 1);
    checkNumber('windowMs', spanMs, { min: 0, minExclusive: true, unit: 'ms' });
    return new KeyedLimiter({ rate: (quota * 1000) / spanMs, burst: quota });
  }
  const ownRate = rate ?? RATE_LIMIT_DEFAULTS.rate;
  const ownBurst = burst ?? RATE_LIMIT_DEFAULTS.burst;
  checkNumber('rate', ownRate, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkInteger('burst', ownBurst, 1);
  return new KeyedLimiter({ rate: ownRate, burst: ownBurst });
}

/** A store brings its own rate and burst; the headers need a rate that refills and a whole quota. */
function checkStore(name: string, store: unknown): RateLimitStore {
  checkObject(name, store);
  const { take, rate, burst } = store as Partial<RateLimitStore>;
  checkFunction(`${name}.take`, take);
  checkNumber(`${name}.rate`, rate, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkNumber(`${name}.burst`, burst, { min: 1 });
  return store as RateLimitStore;
}

function headersOf(options: RateLimitOptions<never>): RateLimitHeaderDraft | false {
  const headers = oneOf(options, 'headers', 'standardHeaders');
  if (headers === undefined) return RATE_LIMIT_DEFAULTS.headers;
  if (headers.name === 'headers') {
    checkOneOf('headers', headers.value, [...RATE_LIMIT_HEADER_DRAFTS, false as const]);
    return headers.value;
  }
  const standard = headers.value;
  checkOneOf('standardHeaders', standard, [...RATE_LIMIT_HEADER_DRAFTS, true, false]);
  // As express-rate-limit reads it: `true` has meant draft-6 there since draft-7 came out.
  return standard === true ? 'draft-6' : standard;
}

function policyNameOf(options: RateLimitOptions<never>): string {
  const policyName = oneOf(options, 'policyName', 'identifier');
  if (policyName === undefined) return RATE_LIMIT_DEFAULTS.policyName;
  // Written inside a quoted string in the headers, and as a metrics label: nothing there needs escaping.
  if (typeof policyName.value !== 'string' || !/^[\w\-.:]{1,64}$/.test(policyName.value)) {
    throw expected(policyName.name, '1 to 64 letters, digits or -_.:', policyName.value);
  }
  return policyName.value;
}

function onStoreErrorOf(options: RateLimitOptions<never>): StoreErrorAction {
  const onStoreError = oneOf(options, 'onStoreError', 'passOnStoreError');
  if (onStoreError === undefined) return RATE_LIMIT_DEFAULTS.onStoreError;
  if (onStoreError.name === 'onStoreError') {
    checkOneOf('onStoreError', onStoreError.value, STORE_ERROR_ACTIONS);
    return onStoreError.value;
  }
  checkBoolean('passOnStoreError', onStoreError.value);
  return onStoreError.value ? 'allow' : 'deny';
}

function checkMessage(message: unknown): void {
  if (typeof message !== 'function' && typeof message !== 'string' && (message === null || typeof message !== 'object')) {
    throw expected('message', 'a string, an object or a function', message);
  }
}

/** The middleware logs through `child()`: express-rate-limit's `{ error, warn }` logger has none. */
function checkLogger(logger: unknown): void {
  checkObject('logger', logger);
  checkFunction('logger.child', (logger as { child?: unknown }).child);
}
