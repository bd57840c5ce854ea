import type { CircuitBreakerOptions } from '../breaker/circuit-breaker.ts';
import type { AdaptiveTuning } from '../quota/adaptive-rate.ts';
import type { LimitSpec, ProviderLimits } from '../quota/provider-limits.ts';
import type { LlmRequest, Provider } from '../provider/provider.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../provider/provider.ts';
import { expected } from '../validation/checks.ts';

/**
 * A provider and the client-side mechanisms in front of it: the one shape every way of describing a
 * provider comes to — `runPipeline`'s `providers`, the providers file (each entry, less the
 * provider itself) and the command line's flags — and what a `CallGate` is made from.
 */
export interface ProviderSetup {
  /** The provider the gate calls. */
  readonly provider: Provider;
  /**
   * Every limit the provider sets (requests, tokens, input/output tokens; `requestLimit(rate,
   * burst)` for a request rate alone), kept in this process — or limits kept elsewhere (shared
   * through Redis), as a {@link ProviderLimits}. Each attempt, retries included, takes its cost first.
   */
  readonly limits: readonly LimitSpec[] | ProviderLimits;
  /**
   * A circuit breaker in front of the provider, with these options: it opens on consecutive server
   * errors, timeouts and network errors; while open, attempts fail at once with nothing spent.
   * @default none
   */
  readonly breaker?: BreakerSetup | undefined;
  /**
   * Adapt the request rate to 429s (never above the configured rate), tuned so; `{}` for the
   * defaults. Needs a finite request rate.
   * @default none (a fixed rate)
   */
  readonly adaptive?: AdaptiveTuning | undefined;
  /** Lower the limits to what the provider's rate-limit headers say remains, and the request rate to the limit they state; never raise either. @default false */
  readonly syncHeaders?: boolean | undefined;
  /**
   * Output tokens a call may take: what it reserves from token limits until its usage is known, and
   * the request's max tokens to a provider over a network. An integer >= 1.
   * @default 256
   */
  readonly maxOutputTokens?: number | undefined;
  /** Calls in flight at once to this provider, an integer >= 1. @default no cap beyond the workers */
  readonly maxConcurrent?: number | undefined;
  /**
   * How long one attempt may wait for the provider's answer, in ms (> 0). One that outlasts it is
   * aborted with a retryable `TimeoutError` and tried again within the deadline, so a call that
   * hangs does not take the whole deadline with it.
   * @default Infinity (an attempt may take what is left of the deadline, and a timeout then ends the call)
   */
  readonly callTimeoutMs?: number | undefined;
  /**
   * What the provider charges, in USD per million tokens: every call's cost is its usage at this
   * price, and a budget reserves each call's worst case at it. @default none (no cost figures; no budget)
   */
  readonly price?: ProviderPrice | undefined;
  /**
   * Input tokens of a request, for token limits.
   * @default the prompt counted with a real tokenizer (gpt-tokenizer, o200k)
   */
  readonly estimateInputTokens?: ((request: LlmRequest) => number | Promise<number>) | undefined;
}

/** A model's price, USD per million tokens. */
export interface ProviderPrice {
  /** USD per million input (prompt) tokens, finite, >= 0. */
  readonly inputPerMTok: number;
  /** USD per million output tokens, finite, >= 0. */
  readonly outputPerMTok: number;
  /**
   * USD per million input tokens read from the provider's prompt cache, finite, >= 0.
   * @default the input price at the vendor's ratio (Anthropic 0.1×, OpenAI and Azure 0.5×: models differ; other providers 1×)
   */
  readonly cachedInputPerMTok?: number | undefined;
  /**
   * USD per million input tokens written to the provider's prompt cache, finite, >= 0.
   * @default the input price at the vendor's ratio (Anthropic's 5-minute writes 1.25×; OpenAI, Azure and other providers 1×)
   */
  readonly cacheWritePerMTok?: number | undefined;
}

/** A circuit breaker's options in front of a provider, and how long a run waits for the provider to come back. */
export interface BreakerSetup extends Omit<CircuitBreakerOptions, 'clock' | 'name' | 'logger'> {
  /**
   * Once the circuit has been open this long, every probe failing, a run stops as on Ctrl-C: the
   * articles in flight end `cancelled`, the rest are not started, all left for a resume. Ms;
   * `Infinity` never gives up.
   * @default 30000
   */
  readonly giveUpAfterMs?: number | undefined;
}

/** The limits a setup's `limits` describe: the specs given, or those of the limits kept elsewhere. */
export function specsOf(limits: ProviderSetup['limits']): readonly LimitSpec[] {
  return isProviderLimits(limits) ? limits.specs : limits;
}

/** Whether a setup's `limits` are kept elsewhere (a `ProviderLimits`) rather than given as specs. */
export const isProviderLimits = (limits: ProviderSetup['limits']): limits is ProviderLimits => !Array.isArray(limits);

/** Which cross-field rule a provider's options break: see {@link providerSetupProblem}. */
export type ProviderSetupRule = 'token-burst' | 'adaptive-rate';

/** A combination of a provider's options that cannot work, found before any call is made. */
export interface ProviderSetupProblem {
  /** Which rule the setup breaks. */
  readonly rule: ProviderSetupRule;
  /** The option at fault, as a path into the setup: `limits[1].burst`, `adaptive`. */
  readonly field: string;
  /** What it must be, in words that name the other option: `more than maxOutputTokens (256; …)`. */
  readonly expected: string;
  /** The value that breaks it. */
  readonly value: unknown;
}

/**
 * The first cross-field rule `setup` breaks, or undefined: a token limit whose burst cannot hold a
 * call (each reserves its prompt's tokens plus `maxOutputTokens` at once, so every call would fail
 * at run time), or an adaptive rate over an unlimited request rate (it adapts below the configured
 * one). The one check of these rules: the gate runs it, and so do the providers file's reader and
 * the command line, each wording the problem in its own terms.
 */
export function providerSetupProblem(
  setup: Pick<ProviderSetup, 'limits' | 'adaptive' | 'maxOutputTokens'>,
): ProviderSetupProblem | undefined {
  const specs = specsOf(setup.limits);
  const maxOutputTokens = setup.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  const reserved = `maxOutputTokens (${maxOutputTokens}${setup.maxOutputTokens === undefined ? ', the default' : ''}`;
  for (const [index, spec] of specs.entries()) {
    if (spec.rate === Infinity) continue;
    const field = `limits[${index}].burst`;
    if (spec.kind === 'tokens' && spec.burst <= maxOutputTokens) {
      return {
        rule: 'token-burst',
        field,
        expected: `more than ${reserved}; a call takes its prompt's tokens plus that many at once)`,
        value: spec.burst,
      };
    }
    if (spec.kind === 'output-tokens' && spec.burst < maxOutputTokens) {
      return { rule: 'token-burst', field, expected: `at least ${reserved}; a call takes that many at once)`, value: spec.burst };
    }
  }
  if (setup.adaptive !== undefined) {
    const rate = isProviderLimits(setup.limits) ? setup.limits.rate : (specs.find((spec) => spec.kind === 'requests')?.rate ?? Infinity);
    if (!(rate < Infinity)) {
      return {
        rule: 'adaptive-rate',
        field: 'adaptive',
        expected: 'left out over an unlimited request rate (it adapts below a finite one)',
        value: setup.adaptive,
      };
    }
  }
  return undefined;
}

/** Throws a `TypeError` naming the option when `setup` breaks a cross-field rule ({@link providerSetupProblem}). */
export function checkProviderSetup(setup: Pick<ProviderSetup, 'limits' | 'adaptive' | 'maxOutputTokens'>, name: string): void {
  const problem = providerSetupProblem(setup);
  if (problem !== undefined) throw expected(`${problem.field} of "${name}"`, problem.expected, problem.value);
}
