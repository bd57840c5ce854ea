import { sleep, type Clock } from '../clock.ts';
import type { CallOptions, LlmOutput, LlmRequest, LlmResponse, Provider, ResponseHeaders } from '../provider/provider.ts';
import type { RateLimitSignals } from '../provider/rate-limit-signals.ts';
import { parseRateLimitHeaders } from '../vendors/rate-limit-headers.ts';
import { valueForSchema } from '../simulator/schema-value.ts';

/** One scripted answer: an error to throw, or output after `latencyMs`; `hang` waits for the abort. */
export interface Step {
  /** How long the call takes on the clock, in ms. @default 0 */
  readonly latencyMs?: number;
  /** Reject with this error (after the latency). */
  readonly error?: Error;
  /** Never answer: the call settles only when its signal aborts. */
  readonly hang?: boolean;
}

/**
 * A provider that plays a script, one step per call (the last step repeats), on a given clock,
 * and records when each call arrived: for tests of code built on the pipeline or the gate, where
 * each failure must come on cue.
 */
export interface ScriptedProviderOptions {
  /** Names the provider in routing and metrics. */
  readonly name: string;
  /** The clock its latencies run on: the test's `ManualClock`. */
  readonly clock: Clock;
  /** One step per call, the last repeating. @default [{}] (every call answers at once) */
  readonly script?: readonly Step[] | undefined;
}

/** A provider for tests that answers by a script: one step per call (a latency, an error, a hang), the last repeating, on the test's clock. */
export class ScriptedProvider implements Provider {
  /** Names the provider in results and figures. */
  readonly name: string;
  /** Every call made, in order: when it arrived (on the clock) and its request. */
  readonly calls: { atMs: number; request: LlmRequest }[] = [];
  readonly #clock: Clock;
  readonly #script: readonly Step[];

  constructor(options: ScriptedProviderOptions) {
    this.name = options.name;
    this.#clock = options.clock;
    this.#script = options.script ?? [{}];
  }

  /** Its name and the request, the article's id included: a scripted answer names the article. */
  answerIdentity(request: LlmRequest, maxOutputTokens: number): unknown {
    const { task, articleId, prompt, schema } = request;
    return { scripted: this.name, task, articleId, prompt, schema, maxOutputTokens };
  }

  /** What a step's headers (an error's) say, read in any style: a script may stand in for any vendor. */
  rateLimits(headers: ResponseHeaders): RateLimitSignals {
    return parseRateLimitHeaders(headers);
  }

  /** Plays the next step: after its latency answers (a fixed answer for the built-in tasks, one made from the schema for others), rejects with its error, or hangs until aborted. */
  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    const step = this.#script[Math.min(this.calls.length, this.#script.length - 1)]!;
    this.calls.push({ atMs: this.#clock.now(), request });
    if (step.hang) await sleep(this.#clock, 1e9, options.signal);
    await sleep(this.#clock, step.latencyMs ?? 0, options.signal);
    if (step.error !== undefined) throw step.error;
    return { output: scriptedAnswer(request) };
  }
}

/**
 * What a scripted call answers: for the built-in tasks a fixed answer naming the article (`summary
 * of 7`), for any other a value made from its schema alone — the same for every call, no ajv.
 */
function scriptedAnswer(request: LlmRequest): LlmOutput {
  if (request.task === 'summarize') return { summary: `summary of ${request.articleId}`, keywords: ['k'] };
  if (request.task === 'sentiment') return { sentiment: 'positive', score: 0.5 };
  return (valueForSchema(request.schema) ?? {}) as LlmOutput;
}

/**
 * Advances a `ManualClock` in steps of `stepMs` until `promise` settles, and returns its value (or
 * rejects with its error): runs a whole pipeline on manual time, exactly and at once.
 */
export async function drive<T>(clock: { advance(ms: number): Promise<void> }, promise: Promise<T>, stepMs = 1): Promise<T> {
  let settled = false;
  const tracked = promise.finally(() => (settled = true));
  for (let i = 0; !settled; i++) {
    if (i > 10_000_000) throw new Error('drive(): the promise never settled');
    await clock.advance(stepMs);
  }
  return tracked;
}
