// The flags every run takes (the main command and `bench` alike), their checks, and what they build.
import { InvalidArgumentError, Option, type Command } from 'commander';
import pino, { type Logger } from 'pino';
import {
  BREAKER_DEFAULTS,
  GATE_DEFAULTS,
  PIPELINE_DEFAULTS,
  RETRY_DEFAULTS,
  SIMULATED_DEFAULTS,
  formatDuration,
  requestLimit,
  providerSetupProblem,
  SimulatedProvider,
  loadProvidersConfig,
  type HeaderStyle,
  type LimitSpec,
  type ProfileName,
  type ProviderQuota,
  type SimulatedConfig,
  type ProviderSetup,
  type Provider,
  type ProviderLimits,
  HttpApiProvider,
} from '../src/index.ts';
import { HEADER_STYLES } from '../src/vendors/rate-limit-headers.ts';
import { PROFILE_NAMES } from '../src/simulator/simulated.ts';
import { parseOutageWindow } from '../src/config/providers-config.ts';
import { loadTokenizer } from '../src/provider/token-estimate.ts';
import { callsHttpApi, httpClientFromConfig, httpClientFromFlags, type ClientFlags, type HttpClient } from './client-options.ts';
import { formatMs } from './format.ts';
import { accepting, duration, integer, oneOf, rate, showAcceptedValues, type ValueParser } from './parse-values.ts';
import { UsageError } from './usage-error.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Flags shared by every run; `rate` and `burst` are added per command (one value, or a list for bench). */
export interface RunFlags {
  articles: number;
  workers: number;
  timeout: number;
  /** `Infinity` unless given: an attempt may take what is left of --timeout. */
  callTimeout: number;
  maxAttempts: number;
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
  /** --max-cost, USD. */
  maxCost?: number;
  adaptive: boolean;
  syncHeaders: boolean;
  breakerThreshold: number;
  breakerCooldown: number;
  breakerGiveUp: number;
  config?: string;
}

/** The logger the flags ask for: pino at --log-level, written synchronously to stderr. */
export function createLogger(flags: Pick<RunFlags, 'logLevel'>): Logger {
  return pino({ level: flags.logLevel, base: undefined }, pino.destination({ dest: 2, sync: true }));
}

export { UsageError };

/**
 * How every command reports a usage error: one line (commander puts its "did you mean" on a line
 * of its own), thrown back to `main` for the exit code instead of exiting inside commander.
 */
export function oneLineErrors(command: Command): Command {
  return showAcceptedValues(command)
    .showSuggestionAfterError(true)
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({
      outputError: (text, write) => write(text.replace(/\n\(Did you mean (.*)\?\)/, ' (did you mean $1?)')),
    });
}

/** The headings --help puts a run's flags under, and the flags under each, in order. */
export const RUN_OPTION_GROUPS: Readonly<Record<string, readonly string[]>> = {
  'The run:': [
    '--articles',
    '--workers',
    '--rate',
    '--burst',
    '--timeout',
    '--call-timeout',
    '--max-attempts',
    '--config',
    '--tasks',
    '--dry-run',
  ],
  'Batch API:': ['--batch', '--batch-poll', '--batch-size'],
  'Cost and budget:': ['--price-input', '--price-output', '--max-cost', '--budget-key'],
  'Input and output:': [
    '--input',
    '--input-format',
    '--skip-invalid',
    '--output',
    '--resume',
    '--overwrite',
    '--json',
    '--quiet',
    '--log-level',
    '--grid',
    '--repeat',
    '--format',
    '--chart',
    '--report',
    '--dashboard',
    '--dashboard-host',
  ],
  'Limits, retries and the breaker:': [
    '--tpm',
    '--max-output-tokens',
    '--adaptive',
    '--sync-headers',
    '--breaker-threshold',
    '--breaker-cooldown',
    '--breaker-give-up',
  ],
  'Real providers:': ['--provider', '--model', '--base-url', '--api-key-env', '--api-version'],
  'Sharing a quota through Redis:': [
    '--redis',
    '--quota-key',
    '--redis-prefix',
    '--redis-timeout',
    '--redis-fallback',
    '--fallback-share',
    '--redis-cluster',
    '--no-redis-cluster',
    '--redis-ca',
    '--redis-cert',
    '--redis-key',
  ],
  'The simulated provider:': [
    '--min-latency',
    '--max-latency',
    '--profile',
    '--seed',
    '--provider-rate',
    '--provider-burst',
    '--headers',
    '--outage',
  ],
};

/**
 * Puts each of `command`'s run flags under its heading in --help, the headings in the order above
 * (--help and --version stay first, under "Options:"); call it once every flag is added.
 */
export function groupRunOptions(command: Command): Command {
  const headings = Object.keys(RUN_OPTION_GROUPS);
  const headingOf = (option: Option) => headings.find((heading) => RUN_OPTION_GROUPS[heading]!.includes(option.long ?? ''));
  for (const option of command.options) {
    const heading = headingOf(option);
    if (heading !== undefined) option.helpGroup(heading);
  }
  const rank = (option: Option) => {
    const heading = headingOf(option);
    return heading === undefined ? -1 : headings.indexOf(heading);
  };
  (command.options as Option[]).sort((a, b) => rank(a) - rank(b));
  return command;
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
    new Option('--profile <name>', `simulated failures: ${PROFILE_NAMES.join(', ')} (production: 10% 429, 5% 503, 5% hang)`)
      .argParser(oneOf(PROFILE_NAMES))
      .default(SIMULATED_DEFAULTS.profile),
  ];
}

/** Throws a UsageError unless --min-latency is at most --max-latency. */
export function checkLatencyRange(flags: { readonly minLatency: number; readonly maxLatency: number }): void {
  if (flags.minLatency > flags.maxLatency) {
    throw new UsageError(`--min-latency (${formatMs(flags.minLatency)}) must not exceed --max-latency (${formatMs(flags.maxLatency)})`);
  }
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

export function validateRunFlags(flags: RunFlags & Partial<ClientFlags>): void {
  if (flags.config?.trim() === '') throw new UsageError('--config needs a file name');
  checkLatencyRange(flags);
  if (flags.callTimeout !== Infinity && flags.callTimeout >= flags.timeout) {
    throw new UsageError(
      `--call-timeout (${formatDuration(flags.callTimeout)}) must be shorter than --timeout (${formatDuration(flags.timeout)}): ` +
        "an attempt never has more than what is left of the article's budget",
    );
  }
  if (flags.providerBurst !== undefined && flags.providerRate === undefined) {
    throw new UsageError('--provider-burst needs --provider-rate (the quota it belongs to)');
  }
  if (flags.config !== undefined) {
    for (const flag of ['providerRate', 'providerBurst', 'headers', 'outage', 'tpm', 'adaptive', 'syncHeaders'] as const) {
      if (flags[flag] !== undefined && flags[flag] !== false) {
        const name = flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
        throw new UsageError(`--${name} describes a single provider; with --config set it per provider in the file`);
      }
    }
  }
  if (flags.syncHeaders && flags.headers === undefined && flags.config === undefined && !callsHttpApi(flags)) {
    throw new UsageError('--sync-headers needs --headers: without it the simulated provider sends no rate-limit headers');
  }
  if (flags.tasks?.trim() === '') throw new UsageError('--tasks needs a file name');
  if ((flags.priceInput === undefined) !== (flags.priceOutput === undefined)) {
    throw new UsageError('--price-input and --price-output go together: a call costs its input and its output tokens');
  }
  if (flags.config !== undefined && flags.priceInput !== undefined) {
    throw new UsageError('--price-input describes a single provider; with --config set "price" per provider in the file');
  }
  if (flags.maxCost !== undefined && flags.config === undefined && flags.priceInput === undefined) {
    throw new UsageError('--max-cost needs a price to count in: give --price-input and --price-output (USD per million tokens)');
  }
  if (flags.inputFormat !== undefined && flags.input === undefined) throw new UsageError('--input-format applies to --input only');
  if (flags.skipInvalid && flags.input === undefined) {
    throw new UsageError('--skip-invalid applies to --input files only');
  }
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

/**
 * A simulated provider: `sim` (a provider's settings from --config) over what the flags describe.
 * A new one per run, so a seed replays the same run.
 */
export function createProvider(flags: RunFlags, name: string = SIMULATED_DEFAULTS.name, sim: SimulatedConfig = {}): SimulatedProvider {
  return new SimulatedProvider({
    name,
    minLatencyMs: sim.minLatencyMs ?? flags.minLatency,
    maxLatencyMs: sim.maxLatencyMs ?? Math.max(flags.maxLatency, sim.minLatencyMs ?? 0),
    profile: sim.profile ?? flags.profile,
    seed: sim.seed ?? flags.seed,
    quota: sim.quota ?? providerQuota(flags),
    headerStyle: sim.headers ?? flags.headers,
    outage: sim.outage ?? flags.outage,
  });
}

/** The simulated provider's own quota the flags set (--provider-rate, --provider-burst), if any. */
export function providerQuota(flags: Pick<RunFlags, 'providerRate' | 'providerBurst'>): ProviderQuota | undefined {
  return flags.providerRate === undefined ? undefined : { rate: flags.providerRate, burst: flags.providerBurst ?? 1 };
}

/** The client-side mechanisms the flags ask for, around `provider`, at request rate `rate` with `burst`. */
export function providerSetup(flags: RunFlags, provider: Provider, rate: number, burst: number): ProviderSetup {
  const limits: LimitSpec[] = requestLimit(rate, burst);
  if (flags.tpm !== undefined) limits.push({ kind: 'tokens', rate: flags.tpm / 60, burst: flags.tpm });
  const setup: ProviderSetup = {
    provider,
    limits,
    price: flags.priceInput === undefined ? undefined : { inputPerMTok: flags.priceInput, outputPerMTok: flags.priceOutput! },
    adaptive: flags.adaptive ? {} : undefined,
    syncHeaders: flags.syncHeaders,
    maxOutputTokens: flags.maxOutputTokens,
    callTimeoutMs: flags.callTimeout,
    breaker:
      flags.breakerThreshold === 0
        ? undefined
        : { failureThreshold: flags.breakerThreshold, cooldownMs: flags.breakerCooldown, giveUpAfterMs: flags.breakerGiveUp },
  };
  const problem = providerSetupProblem(setup);
  // A minute's token budget no larger than a call's reservation would fail every article at run time.
  if (problem?.rule === 'token-burst') {
    throw new UsageError(
      `--tpm=${flags.tpm} cannot fit a call: each reserves its prompt's tokens plus --max-output-tokens (${flags.maxOutputTokens}) at once; give a larger --tpm or a smaller --max-output-tokens`,
    );
  }
  if (problem?.rule === 'adaptive-rate')
    throw new UsageError("--adaptive needs a finite --rate to adapt (it never goes above it), got 'inf'");
  return setup;
}

/**
 * The providers and routes of a run: from `--config` when given, else one provider from the flags
 * (simulated unless --provider says otherwise). HTTP providers' keys are read from the environment
 * here, before any call: `keyVariables` says where each provider's came from.
 */
export async function providerSetups(
  flags: RunFlags & Partial<ClientFlags>,
  rate: number,
  burst: number,
  /** A dry run calls nothing: an unset key is no reason to stop it. */
  keyOptional = false,
): Promise<{
  providers: ProviderSetup[];
  routes: Readonly<Record<string, string>> | undefined;
  keyVariables: ReadonlyMap<string, string>;
  /** Each provider's shared quota key, where the providers file names one. */
  quotaKeys: ReadonlyMap<string, string>;
}> {
  const keyVariables = new Map<string, string>();
  const quotaKeys = new Map<string, string>();
  const known = (client: HttpClient | undefined): Provider | undefined => {
    if (client !== undefined) keyVariables.set(client.provider.name, client.keyVariable);
    return client?.provider;
  };
  if (flags.config === undefined) {
    const provider = known(httpClientFromFlags(flags, process.env, keyOptional)) ?? createProvider(flags);
    return { providers: [providerSetup(flags, provider, rate, burst)], routes: undefined, keyVariables, quotaKeys };
  }
  const config = await loadProvidersConfig(flags.config);
  const source = flags.config;
  for (const p of config.providers) if (p.quotaKey !== undefined) quotaKeys.set(p.name, p.quotaKey);
  const providers = config.providers.map(
    (p, index): ProviderSetup => ({
      ...p,
      // Each provider draws its own numbers: the same seed would give both the same fate per call.
      provider:
        known(httpClientFromConfig(p, source, process.env, keyOptional)) ??
        createProvider(flags, p.name, { seed: flags.seed + index, ...p.simulated }),
      // The file's own, else the flag's: --call-timeout is a run-wide default.
      callTimeoutMs: p.callTimeoutMs ?? flags.callTimeout,
    }),
  );
  return { providers, routes: { ...config.routes }, keyVariables, quotaKeys };
}

/**
 * Loads the optional packages the providers need — their SDKs, the tokenizer that token limits
 * count with — so that one that is not installed is one line and exit 2 before anything is read,
 * written or called.
 */
export async function loadProviderPackages(providers: readonly ProviderSetup[]): Promise<void> {
  for (const setup of providers) {
    if (setup.provider instanceof HttpApiProvider) await setup.provider.loaded();
    const specs = Array.isArray(setup.limits) ? (setup.limits as readonly LimitSpec[]) : (setup.limits as ProviderLimits).specs;
    if (setup.estimateInputTokens === undefined && specs.some((spec) => spec.kind !== 'requests' && spec.rate !== Infinity)) {
      await loadTokenizer();
    }
  }
}
