// `news-processor serve`: the simulated provider as an HTTP server speaking each vendor's API (the registry's dialects).
import { Command, InvalidArgumentError, Option } from 'commander';
import { LLM_SERVER_DEFAULTS, LlmServer, SERVE_HOST_HEADERS } from '../src/server/index.ts';
import { VENDORS } from '../src/vendors/registry.ts';
import { SIMULATED_DEFAULTS, MissingPackageError } from '../src/index.ts';
import type { ProfileName } from '../src/testing/index.ts';
import { formatDuration } from '../src/mechanisms.ts';
import { apiKeyList, checkApiKeys, readApiKeysFile } from './api-keys.ts';
import { accepting, duration, integer, oneOf, rate } from './parse-values.ts';
import { LOG_LEVELS, outageWindow, simulationOptions } from './run-options.ts';
import { checkLatencyRange } from './run-validation.ts';
import { createLogger } from './logger.ts';
import { oneLineErrors } from './one-line-errors.ts';
import { serveUntilStopped } from './serve-until-stopped.ts';

interface ServeFlags {
  host: string;
  port: number;
  rate: number;
  burst: number;
  tpm?: number;
  tokensPerSecond: number;
  failMidStream: number;
  lenientSchemas: boolean;
  apiKeys?: string[];
  apiKeysFile?: string;
  minLatency: number;
  maxLatency: number;
  profile: ProfileName;
  seed: number;
  outage?: { startMs: number; endMs: number };
  batchDuration: number;
  batchWindow: number;
  batchQueueTokens?: number;
  promptCacheTtl: number;
  headers?: string;
  logLevel: (typeof LOG_LEVELS)[number];
}

/** The vendors `serve` speaks, in the registry's order. */
const SERVED = Object.values(VENDORS).flatMap((vendor) =>
  vendor.serve === undefined ? [] : [{ label: vendor.defaults.label, ...vendor.serve }],
);

const EXAMPLES = `
Routes, each vendor's API as the vendor has it:
${SERVED.map(({ label, summary }) => `  ${label}: ${summary}.`).join('\n')}
And GET /v1/models[/ID], GET /healthz, GET /metrics (Prometheus). Each chat route answers whole or streamed (stream: true);
a batch's rows are answered as the live routes answer them, finishing spread over --batch-duration. Any key is accepted
unless --api-keys or --api-keys-file name the ones that are (any other gets the vendor's 401, as a wrong key does). Each
key has its own quota, which the vendor's rate-limit headers state per minute (--rate=10 is 600 requests a minute, at
most --burst at once). Answers to any JSON schema vary with the prompt and --seed, the same request getting the same
answer.

Examples:
  $ news-processor serve                                        on http://127.0.0.1:8080, 10 requests/s per key
  $ news-processor serve --port=0 --rate=2 --burst=2            a free port; the third request in a burst gets 429
  $ news-processor serve --tpm=40000 --profile=production       a token quota too, and real-world failures
  $ news-processor serve --min-latency=0ms --max-latency=0ms --rate=inf    as fast as it goes
  $ news-processor serve --tokens-per-second=20 --fail-mid-stream=0.2      slow streams, one in five cut
  $ news-processor serve --api-keys-file=keys.txt               only the keys in keys.txt (one a line, # comments)
  $ news-processor serve --batch-duration=2s --batch-queue-tokens=90000    batches done in 2 s, a queue of 90,000 tokens a key

The first line on stdout is "listening on http://HOST:PORT"; requests are logged on stderr (pino).
SIGINT or SIGTERM stops taking connections, lets the requests in flight finish and exits 0; a second
one exits at once. Exit codes: 0 stopped cleanly, 2 bad usage or the address cannot be had.`;

/** `a, b and c`. */
function andList(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** Output tokens per second: a number > 0, or `inf` to send a stream at once. */
const tokensPerSecond = accepting("a number > 0, or 'inf' for all at once", (text) => {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'inf') return Infinity;
  const value = /^(\d+(\.\d*)?|\.\d+)$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(value > 0)) throw new InvalidArgumentError("Expected tokens per second (a number > 0) or 'inf'.");
  return value;
});

/** A share of requests: a number from 0 to 1. */
const share = accepting('0 to 1', (text) => {
  const trimmed = text.trim();
  const value = /^(\d+(\.\d*)?|\.\d+)$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(value >= 0 && value <= 1)) throw new InvalidArgumentError('Expected a share from 0 to 1, such as 0.1.');
  return value;
});

/** The `serve` subcommand; `onExit` receives its exit code once it has stopped. */
export function buildServeCommand(onExit: (code: number) => void): Command {
  const command = new Command('serve')
    .description(
      `Run the simulated provider as an HTTP server speaking the ${andList(SERVED.map(({ label }) => label))} APIs, with a quota per API key: ` +
        'an offline stand-in for a real provider, for this tool and for any code written against the official SDKs.',
    )
    .addOption(new Option('--host <host>', 'address to listen on').default(LLM_SERVER_DEFAULTS.host))
    .addOption(
      new Option('--port <n>', 'port to listen on; 0 picks a free one').argParser(integer(0, 65_535)).default(LLM_SERVER_DEFAULTS.port),
    )
    .addOption(new Option('--rate <requests/s>', 'requests per second per API key').argParser(rate).default(LLM_SERVER_DEFAULTS.rate))
    .addOption(
      new Option('--burst <requests>', 'requests one key may make at once after a quiet spell')
        .argParser(integer(1, 1e9))
        .default(LLM_SERVER_DEFAULTS.burst),
    )
    .addOption(new Option('--tpm <tokens/min>', 'also limit LLM tokens (prompt plus answer) per minute per API key').argParser(integer(1)))
    .addOption(
      new Option('--tokens-per-second <n>', 'pace of a streamed answer after its first token, which comes after the latency')
        .argParser(tokensPerSecond)
        .default(LLM_SERVER_DEFAULTS.tokensPerSecond),
    )
    .addOption(
      new Option('--fail-mid-stream <share>', 'drop the connection of this share of streams after some of their tokens')
        .argParser(share)
        .default(LLM_SERVER_DEFAULTS.failMidStream),
    )
    .addOption(
      new Option(
        '--lenient-schemas',
        "take any schema marked strict, as other compatible servers do, instead of enforcing the vendor's strict-mode rules",
      ).default(false),
    );
  command
    .addOption(
      new Option(
        '--api-keys <keys>',
        "accept only these API keys, keys separated by commas: any other gets the vendor's 401 (without it or --api-keys-file, every key is accepted)",
      ).argParser(apiKeyList),
    )
    .addOption(
      new Option(
        '--api-keys-file <file>',
        'accept only the API keys in this file, one a line (blank lines and # comments skipped); with --api-keys too, the keys of both',
      ),
    );
  for (const option of simulationOptions()) command.addOption(option);
  command
    .addOption(
      new Option(
        '--seed <n>',
        "seed of the answers' latency and fate, in arrival order, and (with each prompt) of the values made for any schema",
      )
        .argParser(integer(0))
        .default(SIMULATED_DEFAULTS.seed),
    )
    .addOption(
      new Option(
        '--outage <window>',
        "answer as a provider down does (503, or the vendor's own overloaded status), and cut the streams under way, in this window after start, e.g. 2s..8s",
      ).argParser(outageWindow),
    )
    .addOption(
      new Option('--batch-duration <duration>', 'how long a batch takes once validated: its rows finish evenly spread over it, e.g. 30s')
        .argParser(duration({ allowZero: true }))
        .default(LLM_SERVER_DEFAULTS.batchDurationMs, formatDuration(LLM_SERVER_DEFAULTS.batchDurationMs)),
    )
    .addOption(
      new Option('--batch-window <duration>', 'how long a batch may take from its creation: the rows not finished by then expire')
        .argParser(duration({ allowZero: false }))
        .default(LLM_SERVER_DEFAULTS.batchWindowMs, formatDuration(LLM_SERVER_DEFAULTS.batchWindowMs)),
    )
    .addOption(
      new Option(
        '--batch-queue-tokens <tokens>',
        'input tokens one API key may have enqueued in batches not yet ended: a batch past it is refused as its vendor refuses one (default: no limit)',
      ).argParser(integer(1)),
    )
    .addOption(
      new Option(
        '--prompt-cache-ttl <duration>',
        "how long the simulated prompt cache keeps a prefix after its last use, per key, as each vendor caches (a prefix the request marks, or a prompt past the vendor's minimum); 0s for none",
      )
        .argParser(duration({ allowZero: true }))
        .default(LLM_SERVER_DEFAULTS.promptCacheTtlMs, formatDuration(LLM_SERVER_DEFAULTS.promptCacheTtlMs)),
    )
    .addOption(
      new Option(
        '--headers <host>',
        `imitate the limit signals of this host on the routes of the API it speaks: ${SERVE_HOST_HEADERS.join(', ')} (none: no rate-limit headers and no 429, a request over the quota waits) (default: each vendor's own)`,
      ).argParser(oneOf(SERVE_HOST_HEADERS)),
    )
    .addOption(
      new Option('--log-level <level>', `pino log level, logs go to stderr: ${LOG_LEVELS.join(', ')}`)
        .argParser(oneOf(LOG_LEVELS))
        .default('info'),
    );
  return oneLineErrors(command.addHelpText('after', EXAMPLES)).action(async (flags: ServeFlags) => {
    onExit(await serve(flags));
  });
}

async function serve(flags: ServeFlags): Promise<number> {
  checkLatencyRange(flags);
  if (flags.apiKeys !== undefined) checkApiKeys(flags.apiKeys);
  const fromFile = flags.apiKeysFile === undefined ? undefined : await readApiKeysFile(flags.apiKeysFile);
  const apiKeys = flags.apiKeys === undefined && fromFile === undefined ? undefined : [...(flags.apiKeys ?? []), ...(fromFile ?? [])];
  const server = new LlmServer({
    rate: flags.rate,
    burst: flags.burst,
    tokensPerMinute: flags.tpm,
    tokensPerSecond: flags.tokensPerSecond,
    failMidStream: flags.failMidStream,
    lenientSchemas: flags.lenientSchemas,
    apiKeys,
    batchDurationMs: flags.batchDuration,
    batchWindowMs: flags.batchWindow,
    batchQueueTokens: flags.batchQueueTokens,
    promptCacheTtlMs: flags.promptCacheTtl,
    headers: flags.headers,
    simulation: {
      minLatencyMs: flags.minLatency,
      maxLatencyMs: flags.maxLatency,
      profile: flags.profile,
      seed: flags.seed,
      outage: flags.outage,
    },
    logger: createLogger(flags),
  });
  await serveUntilStopped(server, flags.host, flags.port, (error) => {
    if (error instanceof MissingPackageError) throw error;
  });
  return 0;
}
