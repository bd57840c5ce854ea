/**
 * An in-process stand-in for an LLM API: seeded latency, seeded failures, optionally a server-side
 * quota that answers a client sending too fast with real 429s and a retry-after, rate-limit headers
 * in a real provider's style, and an outage window.
 */

import { sleep, systemClock, type Clock } from '../clock.ts';
import { TokenBucket } from '../limiter/token-bucket.ts';
import {
  RateLimitError,
  ServerError,
  BadRequestError,
  TimeoutError,
  type CallOptions,
  type LlmOutput,
  type LlmRequest,
  type LlmResponse,
  type Provider,
  type ProviderTarget,
  type RequestFraming,
  type ResponseHeaders,
} from '../provider/provider.ts';
import { createRandom } from './random.ts';
import {
  HEADER_STYLES,
  formatRateLimitHeaders,
  parseRateLimitHeaders,
  type HeaderStyle,
  type LimitSnapshot,
} from '../vendors/rate-limit-headers.ts';
import { checkDurationMs, checkInteger, checkNumber, checkObject, checkOneOf, checkString, expected, show } from '../validation/checks.ts';
import { SchemaError } from '../provider/schema-validators.ts';
import { simulatedAnswer } from './simulated-answers.ts';
import { readAnswer } from '../provider/answer.ts';
import type { RateLimitSignals } from '../provider/rate-limit-signals.ts';

/** How often, per call, the simulated provider fails and how. The probabilities sum to at most 1. */
export interface FailureProfile {
  /** Probability of a 429 ({@link RateLimitError}) after the latency, in [0, 1]. */
  readonly rateLimitedProbability: number;
  /** Probability of a 503 ({@link ServerError}) after the latency, in [0, 1]. */
  readonly serverErrorProbability: number;
  /** Probability that the call never answers (see `hangMs`), in [0, 1]. */
  readonly hangProbability: number;
  /**
   * Probability of an answer that does not fit the schema (a required field left out) — a
   * `MalformedOutputError` carrying the answer and its problems, billed its usage — in [0, 1]. A
   * repair (a request carrying the conversation) is answered fit: the simulation heeds the problems.
   * @default 0
   */
  readonly malformedProbability?: number | undefined;
}

/** A simulated provider's failure profile by name: `default` (none), `production`, `stress`, `outage`, `unfit` (answers that do not fit their schema). */
export type ProfileName = 'default' | 'production' | 'stress' | 'outage' | 'unfit';

/**
 * The named failure profiles: none, what a busy production API does, a hostile one, an outage:
 * no random failures, but every call in {@link OUTAGE_PROFILE_WINDOW} fails with 503; and a model
 * that answers a fifth of its calls unfit for the schema (which repairs mend).
 */
export const FAILURE_PROFILES: Readonly<Record<ProfileName, FailureProfile>> = Object.freeze({
  default: Object.freeze({ rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0 }),
  production: Object.freeze({ rateLimitedProbability: 0.1, serverErrorProbability: 0.05, hangProbability: 0.05 }),
  stress: Object.freeze({ rateLimitedProbability: 0.25, serverErrorProbability: 0.1, hangProbability: 0.15 }),
  outage: Object.freeze({ rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0 }),
  unfit: Object.freeze({ rateLimitedProbability: 0, serverErrorProbability: 0, hangProbability: 0, malformedProbability: 0.2 }),
});

/** A span of time in which the provider is down, in ms since its creation on its clock: [startMs, endMs). */
export interface OutageWindow {
  /** When the outage begins; a call arriving at this instant fails. Finite, >= 0. */
  readonly startMs: number;
  /** When it is over; a call arriving at this instant succeeds. Finite, >= startMs. */
  readonly endMs: number;
}

/** The outage the `'outage'` profile brings when no `outage` option is given: 2 s to 8 s after creation. */
export const OUTAGE_PROFILE_WINDOW: OutageWindow = Object.freeze({ startMs: 2000, endMs: 8000 });

export const PROFILE_NAMES: readonly ProfileName[] = Object.freeze(Object.keys(FAILURE_PROFILES) as ProfileName[]);

export const isProfileName = (value: unknown): value is ProfileName => typeof value === 'string' && Object.hasOwn(FAILURE_PROFILES, value);

/** A server-side quota: a token bucket the provider keeps for itself, one token per call. */
export interface ProviderQuota {
  /** Calls admitted per second, sustained; > 0, `Infinity` admits everything. */
  readonly rate: number;
  /** Calls admitted at one instant after a quiet spell; at least 1. */
  readonly burst: number;
}

/** What `new SimulatedProvider()` takes: latency, failure profile, quota, outage, seed and clock. */
export interface SimulatedProviderOptions {
  /** Names the provider in logs and metrics. @default SIMULATED_DEFAULTS.name ("simulated") */
  readonly name?: string;
  /** Shortest answer time in ms; latency is uniform in [min, max]. @default SIMULATED_DEFAULTS.minLatencyMs (200) */
  readonly minLatencyMs?: number;
  /** Longest answer time in ms. @default SIMULATED_DEFAULTS.maxLatencyMs (800) */
  readonly maxLatencyMs?: number;
  /**
   * Failure behaviour: a name from {@link FAILURE_PROFILES} or explicit probabilities. `'outage'`
   * fails no call at random but brings {@link OUTAGE_PROFILE_WINDOW} unless `outage` says otherwise.
   * @default SIMULATED_DEFAULTS.profile ("default": never fails)
   */
  readonly profile?: ProfileName | FailureProfile;
  /**
   * Seeds the random draws (an integer), so a run with the same calls is repeatable; and, with each
   * request's task and prompt, the values made for schemas other than the built-in tasks.
   * @default SIMULATED_DEFAULTS.seed (1)
   */
  readonly seed?: number;
  /** Server-side quota; calls beyond it get an immediate 429 with a retry-after. @default none */
  readonly quota?: ProviderQuota;
  /** Time source for latency, hangs and the quota. @default systemClock */
  readonly clock?: Clock;
  /** How long a hanging call waits before it rejects with {@link TimeoutError}, in ms. @default SIMULATED_DEFAULTS.hangMs (30 000) */
  readonly hangMs?: number;
  /**
   * When set, every response and every 429 / 503 carries headers as a provider of this style sends
   * them: the quota's status (limit = calls per minute, remaining = whole tokens left, reset = time until full;
   * none without a `quota`) and, on 429s and outage 503s, `retry-after` (whole seconds, rounded up)
   * and `retry-after-ms`.
   * @default none (no headers)
   */
  readonly headerStyle?: HeaderStyle;
  /**
   * A window in which every arriving call fails with a 503 after its latency, whatever the profile
   * drew for it and without spending quota, with a retry-after of the outage's remaining time when
   * `headerStyle` is set.
   * @default none, or OUTAGE_PROFILE_WINDOW with the "outage" profile
   */
  readonly outage?: OutageWindow;
  /**
   * The Unix time, in ms, that the provider's creation corresponds to; date-valued headers
   * (Anthropic's reset timestamps) are this plus the time elapsed on `clock`.
   * @default Date.now() (when the provider is made)
   */
  readonly epochMs?: number;
}

/** What a simulated provider is unless told otherwise. */
export const SIMULATED_DEFAULTS = Object.freeze({
  name: 'simulated',
  /** Shortest answer time, ms; latency is uniform up to `maxLatencyMs`. */
  minLatencyMs: 200,
  maxLatencyMs: 800,
  profile: 'default' as ProfileName,
  seed: 1,
  /** How long a hanging call waits before it times out, ms. */
  hangMs: 30_000,
});

/** What the simulation is, as tracing names it. */
const SIMULATED_TARGET: ProviderTarget = Object.freeze({ vendor: 'news_processor.simulator', model: 'simulated' });

/** The range a random 429's retry-after hint is drawn from, in ms. */
const MIN_RETRY_AFTER_MS = 100;
const MAX_RETRY_AFTER_MS = 1000;

/** Rough English average, as providers' tokenizers go. */
const CHARS_PER_TOKEN = 4;

const SIMULATED_FRAMING: RequestFraming = Object.freeze({ perMessageTokens: 0, perRequestTokens: 0 });

const TOKEN_EPSILON = 1e-9;

/**
 * A simulated LLM provider. Each call that reaches it:
 *
 * 1. draws its random numbers at once, in a fixed order (outcome, latency, retry-after), so call
 *    number n gets the same fate for a given seed however calls interleave in time;
 * 2. if it arrives within the `outage` window, waits its latency and fails with a 503
 *    ({@link ServerError}) — the draws are made all the same, so later calls keep their fate;
 * 3. if a `quota` is set and exhausted, rejects at once with {@link RateLimitError} whose
 *    `retryAfterMs` is the time until the quota admits a call again;
 * 4. hangs, or waits its latency and then fails (429 / 503) or answers with output derived from the
 *    article's text (lead-sentence summary and keywords, or lexicon sentiment); any other schema
 *    gets a value made to fit it, seeded by the seed and the request (not by n: the same request,
 *    the same answer).
 *
 * With a `headerStyle`, responses and errors carry rate-limit headers, computed when they are sent.
 *
 * Aborting the signal rejects with `signal.reason` at any point. All waiting runs on `clock`.
 * Counters (`calls`, `rateLimited`, …) let tests and benchmarks see what the server saw.
 */
export class SimulatedProvider implements Provider {
  /** Names the provider in results and figures. */
  readonly name: string;
  /** Tracing names the simulation as a vendor of its own, so that its spans are never taken for a real API's. */
  readonly target: ProviderTarget = SIMULATED_TARGET;
  /**
   * None: the simulation bills a call's text alone, a token for every four characters, which its
   * UTF-8 bytes always cover.
   */
  readonly framing: RequestFraming = SIMULATED_FRAMING;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #seed: number;
  readonly #failures: FailureProfile;
  readonly #minLatencyMs: number;
  readonly #maxLatencyMs: number;
  readonly #hangMs: number;
  readonly #quota: TokenBucket | undefined;
  readonly #headerStyle: HeaderStyle | undefined;
  readonly #outage: OutageWindow | undefined;
  readonly #createdAtMs: number;
  readonly #epochMs: number;
  #calls = 0;
  #rateLimited = 0;
  #serverErrors = 0;
  #outageErrors = 0;
  #hangs = 0;
  #malformed = 0;

  constructor(options: SimulatedProviderOptions = {}) {
    checkObject('options', options);
    const {
      name = SIMULATED_DEFAULTS.name,
      minLatencyMs = SIMULATED_DEFAULTS.minLatencyMs,
      maxLatencyMs = SIMULATED_DEFAULTS.maxLatencyMs,
      profile = SIMULATED_DEFAULTS.profile,
      seed = SIMULATED_DEFAULTS.seed,
      quota,
      clock = systemClock,
      hangMs = SIMULATED_DEFAULTS.hangMs,
      headerStyle,
      outage = profile === 'outage' ? OUTAGE_PROFILE_WINDOW : undefined,
      epochMs = Date.now(),
    } = options;
    checkString('name', name);
    checkDurationMs('minLatencyMs', minLatencyMs);
    checkDurationMs('maxLatencyMs', maxLatencyMs);
    if (minLatencyMs > maxLatencyMs) throw expected('minLatencyMs', `at most maxLatencyMs (${maxLatencyMs})`, minLatencyMs);
    checkDurationMs('hangMs', hangMs);
    checkInteger('seed', seed, Number.MIN_SAFE_INTEGER);
    if (headerStyle !== undefined) checkOneOf('headerStyle', headerStyle, HEADER_STYLES);
    if (outage !== undefined) checkOutage(outage);
    checkNumber('epochMs', epochMs, { unit: 'Unix epoch ms' });

    this.name = name;
    this.#clock = clock;
    this.#random = createRandom(seed);
    this.#seed = seed;
    this.#failures = resolveProfile(profile);
    this.#minLatencyMs = minLatencyMs;
    this.#maxLatencyMs = maxLatencyMs;
    this.#hangMs = hangMs;
    this.#quota = quota === undefined ? undefined : createQuota(quota, clock);
    this.#headerStyle = headerStyle;
    this.#outage = outage === undefined ? undefined : { startMs: outage.startMs, endMs: outage.endMs };
    this.#createdAtMs = clock.now();
    this.#epochMs = epochMs;
  }

  /** Calls that reached the provider (not those aborted before they were made). */
  get calls(): number {
    return this.#calls;
  }

  /** 429s sent: quota rejections plus random ones (a call aborted before its 429 was sent is not counted). */
  get rateLimited(): number {
    return this.#rateLimited;
  }

  /** 503s sent, the outage's included. */
  get serverErrors(): number {
    return this.#serverErrors;
  }

  /** 503s sent because the call arrived during the outage window (a part of `serverErrors`). */
  get outageErrors(): number {
    return this.#outageErrors;
  }

  /** Calls that started hanging. */
  get hangs(): number {
    return this.#hangs;
  }

  /** Answers sent unfit for their schema. */
  get malformed(): number {
    return this.#malformed;
  }

  /**
   * Its name, seed and failure profile, and the request as a model would read it (task, prompt,
   * schema, description, output cap): the answer is made from the request and the seed alone.
   */
  answerIdentity(request: LlmRequest, maxOutputTokens: number): unknown {
    const { task, prompt, schema, description } = request;
    return { simulated: this.name, seed: this.#seed, profile: this.#failures, task, prompt, schema, description, maxOutputTokens };
  }

  /** Answers after a seeded latency with a seeded answer that fits the request's schema, or fails as its profile, quota or outage says. */
  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    const { signal } = options;
    if (signal?.aborted) throw signal.reason;
    checkRequest(request);
    this.#calls += 1;

    // All draws happen here, also for calls the quota turns away, so call n's fate depends on the
    // seed and n alone — never on timing or on how earlier calls ended.
    const outcomeRoll = this.#random();
    const latencyRoll = this.#random();
    const retryAfterRoll = this.#random();

    // A provider that is down answers from its front door: no quota spent, no random failure.
    const inOutage = this.#inOutage(this.#elapsedMs());
    if (!inOutage && this.#quota !== undefined && !this.#quota.tryAcquire(1)) {
      this.#rateLimited += 1;
      // Whole ms rounded up, as real Retry-After hints are: waiting that long always suffices.
      const retryAfterMs = Math.ceil(this.#quota.msUntil(1));
      throw new RateLimitError('rate limited (429): quota exceeded', { retryAfterMs, headers: this.#headers(retryAfterMs) });
    }

    const outcome = inOutage ? 'outage' : pickOutcome(outcomeRoll, this.#failures);
    if (outcome === 'hang') {
      this.#hangs += 1;
      await sleep(this.#clock, this.#hangMs, signal);
      throw new TimeoutError(`no answer within ${this.#hangMs} ms`, { timeoutMs: this.#hangMs });
    }

    const latencyMs = this.#minLatencyMs + latencyRoll * (this.#maxLatencyMs - this.#minLatencyMs);
    // A zero latency answers without a timer: a real timer costs a millisecond, which would cap
    // a zero-latency run at a thousand calls per second per worker.
    if (latencyMs > 0) await sleep(this.#clock, latencyMs, signal);
    else signal?.throwIfAborted();

    if (outcome === 'outage') {
      this.#serverErrors += 1;
      this.#outageErrors += 1;
      // The latency may have carried the call past the end: then there is nothing left to wait.
      const retryAfterMs = this.#headerStyle === undefined ? undefined : Math.ceil(Math.max(0, this.#outage!.endMs - this.#elapsedMs()));
      throw new ServerError('service unavailable (503): outage', { retryAfterMs, headers: this.#headers(retryAfterMs) });
    }
    if (outcome === 'rateLimited') {
      this.#rateLimited += 1;
      const retryAfterMs = MIN_RETRY_AFTER_MS + Math.floor(retryAfterRoll * (MAX_RETRY_AFTER_MS - MIN_RETRY_AFTER_MS + 1));
      throw new RateLimitError('rate limited (429)', { retryAfterMs, headers: this.#headers(retryAfterMs) });
    }
    if (outcome === 'serverError') {
      this.#serverErrors += 1;
      throw new ServerError(undefined, { headers: this.#headers(undefined) });
    }
    const headers = this.#headers(undefined);
    // A repair is answered fit: the simulation heeds the problems it is shown.
    if (outcome === 'malformed' && (request.messages?.length ?? 0) === 0) {
      this.#malformed += 1;
      await unfitAnswer(request, this.#seed, this.#calls, headers);
    }
    const response = answer(request, this.#seed, this.#calls);
    return headers === undefined ? response : { ...response, headers };
  }

  /** Ms since creation on the provider's clock. */
  #elapsedMs(): number {
    return this.#clock.now() - this.#createdAtMs;
  }

  #inOutage(elapsedMs: number): boolean {
    return this.#outage !== undefined && elapsedMs >= this.#outage.startMs && elapsedMs < this.#outage.endMs;
  }

  /** What its headers say, read in the style it writes them in (nothing without one). */
  rateLimits(headers: ResponseHeaders): RateLimitSignals {
    if (this.#headerStyle === undefined) return { limits: [] };
    return parseRateLimitHeaders(headers, { styles: [this.#headerStyle], nowMs: this.#epochMs + this.#elapsedMs() });
  }

  /** The headers to send now, in the configured style; undefined without one. */
  #headers(retryAfterMs: number | undefined): ResponseHeaders | undefined {
    if (this.#headerStyle === undefined) return undefined;
    const status: LimitSnapshot[] = [];
    if (this.#quota !== undefined) {
      const bucket = this.#quota;
      status.push({
        kind: 'requests',
        // Per minute, as OpenAI and Anthropic state their limits; `remaining` is the bucket's whole tokens.
        limit: Math.round(bucket.rate * 60),
        windowMs: 60_000,
        // Float refill can land a hair under a whole token that is, in truth, there.
        remaining: Math.max(0, Math.floor(bucket.tokens() + TOKEN_EPSILON)),
        resetMs: bucket.msUntil(bucket.burst),
      });
    }
    const nowMs = this.#epochMs + this.#elapsedMs();
    return Object.freeze(formatRateLimitHeaders(this.#headerStyle, status, retryAfterMs, { nowMs }));
  }
}

type Outcome = 'rateLimited' | 'serverError' | 'hang' | 'malformed' | 'outage' | 'answer';

/** Maps a roll in [0, 1) onto consecutive bands of the profile's probabilities. */
function pickOutcome(roll: number, failures: FailureProfile): Outcome {
  let bandEnd = failures.rateLimitedProbability;
  if (roll < bandEnd) return 'rateLimited';
  bandEnd += failures.serverErrorProbability;
  if (roll < bandEnd) return 'serverError';
  bandEnd += failures.hangProbability;
  if (roll < bandEnd) return 'hang';
  bandEnd += failures.malformedProbability ?? 0;
  if (roll < bandEnd) return 'malformed';
  return 'answer';
}

/**
 * Rejects with what an answer unfit for the schema means (`readAnswer`'s `MalformedOutputError`,
 * billed its usage): the answer with its first required field left out, or, where the schema
 * requires none, cut off mid-way (not JSON).
 */
async function unfitAnswer(request: LlmRequest, seed: number, callNumber: number, headers: ResponseHeaders | undefined): Promise<never> {
  const { output, usage } = answer(request, seed, callNumber);
  const required = (request.schema as { required?: unknown }).required;
  const first = Array.isArray(required) && typeof required[0] === 'string' ? required[0] : undefined;
  const unfit =
    first === undefined ? JSON.stringify(output).slice(0, -1) : Object.fromEntries(Object.entries(output).filter(([key]) => key !== first));
  await readAnswer(request, unfit, { usage, headers });
  throw new Error(`the unfit answer to ${request.task} fits its schema`);
}

/** The simulation's answer, with the usage a model's would report: about four characters a token. */
function answer(request: LlmRequest, seed: number, callNumber: number): LlmResponse {
  let output: LlmOutput;
  try {
    output = simulatedAnswer(request, seed);
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    throw new BadRequestError(`400 the ${request.task} schema admits no value the simulation can make: ${error.message}`, {
      status: 400,
      cause: error,
    });
  }
  let conversation = 0;
  for (const message of request.messages ?? []) conversation += message.content.length;
  const usage = {
    inputTokens: Math.ceil((request.prompt.length + conversation) / CHARS_PER_TOKEN),
    outputTokens: Math.ceil(JSON.stringify(output).length / CHARS_PER_TOKEN),
  };
  return { output, usage, model: SIMULATED_TARGET.model, id: `simulated-${callNumber}`, finishReasons: STOPPED };
}

const STOPPED: readonly string[] = Object.freeze(['stop']);

function resolveProfile(profile: unknown): FailureProfile {
  if (isProfileName(profile)) return FAILURE_PROFILES[profile];
  if (profile === null || typeof profile !== 'object') {
    const names = PROFILE_NAMES.map((name) => show(name)).join(', ');
    throw expected('profile', `one of ${names} or a FailureProfile`, profile);
  }
  const { rateLimitedProbability, serverErrorProbability, hangProbability, malformedProbability = 0 } = profile as FailureProfile;
  checkNumber('profile.rateLimitedProbability', rateLimitedProbability, { min: 0, max: 1 });
  checkNumber('profile.serverErrorProbability', serverErrorProbability, { min: 0, max: 1 });
  checkNumber('profile.hangProbability', hangProbability, { min: 0, max: 1 });
  checkNumber('profile.malformedProbability', malformedProbability, { min: 0, max: 1 });
  const total = rateLimitedProbability + serverErrorProbability + hangProbability + malformedProbability;
  if (total > 1) throw new TypeError(`Expected the profile's probabilities to sum to at most 1, got ${total}`);
  return Object.freeze({ rateLimitedProbability, serverErrorProbability, hangProbability, malformedProbability });
}

function createQuota(quota: ProviderQuota, clock: Clock): TokenBucket {
  checkObject('quota', quota);
  // rate 0 would make retry-after infinite and burst < 1 would refuse every call: no real quota does that.
  checkNumber('quota.rate', quota.rate, { min: 0, minExclusive: true, finite: false, unit: 'calls per second' });
  checkNumber('quota.burst', quota.burst, { min: 1 });
  return new TokenBucket({ rate: quota.rate, burst: quota.burst, clock });
}

function checkOutage(outage: OutageWindow): void {
  checkObject('outage', outage);
  checkDurationMs('outage.startMs', outage.startMs);
  checkDurationMs('outage.endMs', outage.endMs);
  if (outage.endMs < outage.startMs) throw expected('outage.endMs', `at least outage.startMs (${outage.startMs})`, outage.endMs);
}

function checkRequest(request: LlmRequest): void {
  checkObject('request', request);
  checkString('request.task', request.task);
  if (typeof request.prompt !== 'string') throw expected('request.prompt', 'a string', request.prompt);
  checkObject('request.schema', request.schema);
}
