import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { KeyedLimiter, type RateLimitStore } from '../limiter/keyed-limiter.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkBoolean, checkFunction, checkInteger, checkNumber, checkObject, checkOneOf, expected } from '../validation/checks.ts';
import type { ClientAddressOptions } from './client-address.ts';
import { RATE_LIMIT_HEADER_DRAFTS, type RateLimitHeaderDraft } from './ietf-headers.ts';
import {
  type LimitedRequest,
  type MaybePromise,
  RATE_LIMIT_DEFAULTS,
  type RateLimitMessage,
  type RateLimitOptions,
  STORE_ERROR_ACTIONS,
  type StoreErrorAction,
} from './rate-limit-options.ts';

/** The options as `rateLimit()` runs them: every default applied, all checked. */
export interface ResolvedRateLimitOptions<Req extends IncomingMessage> {
  readonly store: RateLimitStore;
  /** Undefined: the client's address. */
  readonly key: ((req: Req) => MaybePromise<string>) | undefined;
  readonly cost: number | ((req: Req) => MaybePromise<number>);
  readonly skip: ((req: Req) => MaybePromise<boolean>) | undefined;
  readonly headers: RateLimitHeaderDraft | false;
  readonly legacyHeaders: boolean;
  readonly policyName: string;
  readonly message: RateLimitMessage | ((req: Req, limited: LimitedRequest) => MaybePromise<RateLimitMessage>);
  readonly handler: ((req: Req, res: ServerResponse, limited: LimitedRequest) => void) | undefined;
  readonly onStoreError: StoreErrorAction;
  readonly registry: Registry | undefined;
  readonly logger: Logger;
  readonly clientAddress: Omit<ClientAddressOptions, 'logger'>;
}

/** Checks `options` and applies the defaults: the one place either happens. */
export function resolveRateLimitOptions<Req extends IncomingMessage>(options: RateLimitOptions<Req>): ResolvedRateLimitOptions<Req> {
  checkObject('options', options);
  const {
    limiter,
    key,
    cost = RATE_LIMIT_DEFAULTS.cost,
    skip,
    headers = RATE_LIMIT_DEFAULTS.headers,
    legacyHeaders = RATE_LIMIT_DEFAULTS.legacyHeaders,
    policyName = RATE_LIMIT_DEFAULTS.policyName,
    message = RATE_LIMIT_DEFAULTS.message,
    handler,
    onStoreError = RATE_LIMIT_DEFAULTS.onStoreError,
    registry,
    logger = silentLogger,
  } = options;
  const store = limiter === undefined ? ownLimiter(options) : checkStore(options, limiter);
  if (key !== undefined) checkFunction('key', key);
  if (typeof cost === 'number') checkNumber('cost', cost, { min: 0 });
  else checkFunction('cost', cost);
  if (skip !== undefined) checkFunction('skip', skip);
  if (headers !== false) checkOneOf('headers', headers, RATE_LIMIT_HEADER_DRAFTS);
  checkBoolean('legacyHeaders', legacyHeaders);
  checkPolicyName(policyName);
  checkMessage(message);
  if (handler !== undefined) checkFunction('handler', handler);
  checkOneOf('onStoreError', onStoreError, STORE_ERROR_ACTIONS);
  if (registry !== undefined) checkObject('registry', registry);
  return {
    store,
    key,
    cost,
    skip,
    headers,
    legacyHeaders,
    policyName,
    message,
    handler,
    onStoreError,
    registry,
    logger,
    clientAddress: { trustProxy: options.trustProxy, ipv6Subnet: options.ipv6Subnet, proxyHeader: options.proxyHeader },
  };
}

function ownLimiter(options: RateLimitOptions<never>): KeyedLimiter {
  const { rate = RATE_LIMIT_DEFAULTS.rate, burst = RATE_LIMIT_DEFAULTS.burst } = options;
  checkNumber('rate', rate, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkInteger('burst', burst, 1);
  return new KeyedLimiter({ rate, burst });
}

/** A store brings its own rate and burst; the headers need a rate that refills and a whole quota. */
function checkStore(options: RateLimitOptions<never>, store: RateLimitStore): RateLimitStore {
  if (options.rate !== undefined || options.burst !== undefined) {
    throw expected('rate and burst', 'left out with a limiter (it has its own)', { rate: options.rate, burst: options.burst });
  }
  checkObject('limiter', store);
  checkFunction('limiter.take', store.take);
  checkNumber('limiter.rate', store.rate, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
  checkNumber('limiter.burst', store.burst, { min: 1 });
  return store;
}

function checkPolicyName(policyName: unknown): void {
  // Written inside a quoted string in the headers, and as a metrics label: nothing there needs escaping.
  if (typeof policyName !== 'string' || !/^[\w\-.:]{1,64}$/.test(policyName)) {
    throw expected('policyName', '1 to 64 letters, digits or -_.:', policyName);
  }
}

function checkMessage(message: unknown): void {
  if (typeof message !== 'function' && typeof message !== 'string' && (message === null || typeof message !== 'object')) {
    throw expected('message', 'a string, an object or a function', message);
  }
}
