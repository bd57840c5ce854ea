// The flags every run takes (the main command and `bench` alike): their definitions, defaults and value parsers.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { GATE_DEFAULTS, PIPELINE_DEFAULTS, SIMULATED_DEFAULTS } from '../src/index.ts';
import { parseOutageWindow, PROFILE_NAMES, type ProfileName } from '../src/testing/index.ts';
import { BREAKER_DEFAULTS, HEADER_STYLES, RETRY_DEFAULTS, formatDuration, type HeaderStyle } from '../src/mechanisms.ts';
// The vendors' registry: each one's prompt-cache ratios, which the price flags' help states.
import { HTTP_PROVIDER_DEFAULTS } from '../src/vendors/registry.ts';
import { accepting, duration, integer, oneOf, rate, type ValueParser } from './parse-values.ts';

/**
 * What each vendor's prompt cache bills its reads or writes at, as `--help` says the default:
 * `× 0.1 for Anthropic, × 0.5 for OpenAI and Azure OpenAI, × 1 for others`.
 */
function ratioDefaults(which: 'read' | 'write'): string {
  const byRatio = new Map<number, string[]>();
  for (const { label, promptCacheRatios } of Object.values(HTTP_PROVIDER_DEFAULTS)) {
    const ratio = promptCacheRatios[which];
    if (ratio !== 1) byRatio.set(ratio, [...(byRatio.get(ratio) ?? []), label]);
  }
  const named = [...byRatio].sort(([a], [b]) => a - b);
  const and = (labels: readonly string[]) => (labels.length < 2 ? labels[0] : `${labels.slice(0, -1).join(', ')} and ${labels.at(-1)}`);
  return [...named.map(([ratio, labels]) => `× ${ratio} for ${and(labels)}`), '× 1 for others'].join(', ');
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Flags shared by every run; `rate` and `burst` are added per command (one value, or a list for bench). */
export interface RunFlags {
  articles: number;
  workers: number;
  timeout: number;
  /** `Infinity` unless given: an attempt may take what is left of --timeout. */
  callTimeout: number;
  maxAttempts: number;
  maxRepairs: number;
  minLatency: number;
  maxLatency: number;
  profile: ProfileName;
  seed: number;
  providerRate?: number;
  providerBurst?: number;
  input?: string;
  /** --input-format; absent: by the file's extension. */
  inputFormat?: InputFormat;
  skipInvalid: boolean;
  json: boolean;
  logLevel: (typeof LOG_LEVELS)[number];
  quiet: boolean;
  headers?: HeaderStyle;
  outage?: { startMs: number; endMs: number };
  tpm?: number;
  maxOutputTokens: number;
  /** --tasks: every article's tasks; absent for the built-in pair. */
  tasks?: string;
  /** USD per million tokens, for a single provider (the providers file says `price` per provider). */
  priceInput?: number;
  priceOutput?: number;
  /** USD per million input tokens read from, and written to, the provider's prompt cache; absent: the vendor's ratio of the input price. */
  priceCachedInput?: number;
  priceCacheWrite?: number;
  /** --max-cost, USD. */
  maxCost?: number;
  adaptive: boolean;
  syncHeaders: boolean;
  breakerThreshold: number;
  breakerCooldown: number;
  breakerGiveUp: number;
  config?: string;
}

/** The simulated provider's answer times and failure profile: the same flags for a run and for `serve`. */
export function simulationOptions(): Option[] {
  return [
    new Option('--min-latency <duration>', 'shortest answer time')
      .argParser(duration({ allowZero: true }))
      .default(SIMULATED_DEFAULTS.minLatencyMs, formatDuration(SIMULATED_DEFAULTS.minLatencyMs)),
    new Option('--max-latency <duration>', 'longest answer time')
      .argParser(duration({ allowZero: true }))
      .default(SIMULATED_DEFAULTS.maxLatencyMs, formatDuration(SIMULATED_DEFAULTS.maxLatencyMs)),
    new Option(
      '--profile <name>',
      `simulated failures: ${PROFILE_NAMES.join(', ')} (production: 10% 429, 5% 503, 5% hang; unfit: 20% answers unfit for the schema)`,
    )
      .argParser(oneOf(PROFILE_NAMES))
      .default(SIMULATED_DEFAULTS.profile),
  ];
}

/** --input: the articles from a file or standard input instead of generated (--articles, which it excludes). */
export function inputOption(): Option {
  return new Option(
    '--input <file>',
    "read articles from a file: JSONL, a JSON array or CSV (id, title, content, url?, source?); '-' for standard input",
  ).conflicts('articles');
}

/** The formats --input reads: JSON Lines, one JSON array, CSV with a header row. */
export const INPUT_FORMATS = ['jsonl', 'json', 'csv'] as const;
export type InputFormat = (typeof INPUT_FORMATS)[number];

/** --input-format: how --input is read, when its extension does not say (standard input, a FIFO, a .txt). */
export function inputFormatOption(): Option {
  return new Option('--input-format <format>', `how to read --input: ${INPUT_FORMATS.join(', ')}`)
    .choices(INPUT_FORMATS)
    .default(undefined, 'by the extension: .csv, .json, else jsonl');
}

/** --skip-invalid: bad input lines counted and skipped rather than stopping the command. */
export function skipInvalidOption(): Option {
  return new Option('--skip-invalid', 'with --input: skip and count bad lines instead of stopping').default(false);
}

/** Adds the run flags; `rateOptions` (the command's own --rate and --burst) go right after --workers. */
export function addRunOptions(command: Command, rateOptions: readonly Option[], options: { config?: boolean } = {}): Command {
  command
    .addOption(new Option('--articles <n>', 'number of generated articles').argParser(integer(1, 1e9)).default(5))
    .addOption(new Option('--workers <n>', 'articles processed at once').argParser(integer(1, 100_000)).default(PIPELINE_DEFAULTS.workers));
  for (const option of rateOptions) command.addOption(option);
  command
    .addOption(
      new Option('--timeout <duration>', 'per-article budget for limiter waits and calls together')
        .argParser(duration({ allowZero: false }))
        .default(PIPELINE_DEFAULTS.timeoutMs, formatDuration(PIPELINE_DEFAULTS.timeoutMs)),
    )
    .addOption(
      new Option('--call-timeout <duration>', 'how long one attempt may wait for its answer: one that outlasts it is cut and retried')
        .argParser(duration({ allowZero: false }))
        .default(Infinity, 'the rest of --timeout'),
    )
    .addOption(
      new Option('--max-attempts <n>', 'attempts per call, the first included')
        .argParser(integer(1, 100))
        .default(RETRY_DEFAULTS.maxAttempts),
    )
    .addOption(
      new Option(
        '--max-repairs <n>',
        'times an answer that does not fit its schema is asked again with its problems, apart from the attempts',
      )
        .argParser(integer(0, 100))
        .default(GATE_DEFAULTS.maxRepairs),
    );
  for (const option of simulationOptions()) command.addOption(option);
  command
    .addOption(
      new Option('--seed <n>', 'seed for the simulated provider and generated articles')
        .argParser(integer(0))
        .default(SIMULATED_DEFAULTS.seed),
    )
    .addOption(new Option('--provider-rate <calls/s>', "the provider's own quota: a client sending faster gets 429s").argParser(rate))
    .addOption(
      new Option('--provider-burst <calls>', "burst of the provider's quota (default 1 with --provider-rate)").argParser(integer(1, 1e9)),
    )
    .addOption(inputOption())
    .addOption(inputFormatOption())
    .addOption(skipInvalidOption())
    .addOption(
      new Option('--headers <style>', `send rate-limit headers in this style: ${HEADER_STYLES.join(', ')}`).argParser(oneOf(HEADER_STYLES)),
    )
    .addOption(new Option('--outage <window>', 'answer 503 in this window of the run, e.g. 2s..8s').argParser(outageWindow))
    .addOption(
      new Option('--tpm <tokens/min>', 'also limit LLM tokens per minute (prompt tokens counted with a real tokenizer)').argParser(
        integer(1),
      ),
    )
    .addOption(
      new Option('--max-output-tokens <n>', "a real provider's max_tokens per call; reserved under --tpm until the usage is known")
        .argParser(integer(1))
        .default(GATE_DEFAULTS.maxOutputTokens),
    )
    .addOption(new Option('--adaptive', 'cut the rate on 429s and probe back up, never above --rate').default(false))
    .addOption(new Option('--sync-headers', "lower the buckets to what the provider's rate-limit headers say remains").default(false))
    .addOption(
      new Option('--breaker-threshold <n>', 'consecutive 5xx, timeouts or network errors that open the circuit breaker; 0 for no breaker')
        .argParser(integer(0))
        .default(BREAKER_DEFAULTS.failureThreshold),
    )
    .addOption(
      new Option('--breaker-cooldown <duration>', 'how long the circuit stays open before it admits a probe')
        .argParser(duration({ allowZero: true }))
        .default(BREAKER_DEFAULTS.cooldownMs, formatDuration(BREAKER_DEFAULTS.cooldownMs)),
    )
    .addOption(
      new Option(
        '--breaker-give-up <duration>',
        'how long a provider may stay down (circuit open, every probe failing) before the run stops for a --resume later',
      )
        .argParser(duration({ allowZero: false, allowInf: true }))
        .default(PIPELINE_DEFAULTS.giveUpAfterMs, formatDuration(PIPELINE_DEFAULTS.giveUpAfterMs)),
    )
    .addOption(new Option('--json', 'print only JSON on stdout').default(false))
    .addOption(
      new Option('--log-level <level>', `pino log level, logs go to stderr: ${LOG_LEVELS.join(', ')}`)
        .argParser(oneOf(LOG_LEVELS))
        .default('error'),
    )
    .addOption(new Option('--quiet', 'print the summary only').default(false))
    .addOption(
      new Option(
        '--tasks <tasks.json>',
        "every article's tasks: prompts, schemas, dependencies (default: summarize, then sentiment; see docs/tasks.md)",
      ),
    )
    .addOption(
      new Option(
        '--price-input <usd>',
        'the provider\'s price per million input tokens, USD (with --config: "price" per provider)',
      ).argParser(usd),
    )
    .addOption(new Option('--price-output <usd>', "the provider's price per million output tokens, USD").argParser(usd))
    .addOption(
      new Option(
        '--price-cached-input <usd>',
        "the price per million input tokens read from the provider's prompt cache, USD " +
          `(default: the input price ${ratioDefaults('read')})`,
      ).argParser(usd),
    )
    .addOption(
      new Option(
        '--price-cache-write <usd>',
        "the price per million input tokens written to the provider's prompt cache, USD " +
          `(default: the input price ${ratioDefaults('write')})`,
      ).argParser(usd),
    )
    .addOption(
      new Option(
        '--max-cost <usd>',
        "never spend more than this, USD: every call holds its worst case first; the run stops when spent. The whole job's: " +
          'on --resume what the results file says was spent counts',
      ).argParser(positiveUsd),
    );
  if (options.config !== false) {
    command.addOption(
      new Option(
        '--config <providers.json>',
        'providers, their limits, breakers and simulated settings, and task routes (see docs/limits.md)',
      ),
    );
  }
  return command;
}

/** A price, USD per million tokens: a number >= 0. */
const usd = accepting('>= 0, USD', (text) => {
  const value = /^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= 0 && Number.isFinite(value))) throw new InvalidArgumentError('Expected a price in USD, a number >= 0, like 0.4.');
  return value;
});

/** A budget, USD: a number > 0. */
const positiveUsd = accepting('a number > 0, USD', (text) => {
  const value = /^\s*\$?(\d+(\.\d*)?|\.\d+)\s*$/.test(text) ? Number(text.replace('$', '')) : Number.NaN;
  if (!(value > 0 && Number.isFinite(value))) throw new InvalidArgumentError('Expected an amount in USD, a number > 0, like 5 or 0.25.');
  return value;
});

export const outageWindow: ValueParser<{ startMs: number; endMs: number }> = accepting('start..end, start before end', (text) => {
  const window = parseOutageWindow(text);
  if (window === undefined) throw new InvalidArgumentError('Expected a window like 2s..8s (start before end).');
  return window;
});
