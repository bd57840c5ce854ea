// `news-processor serve`: the simulated provider as an HTTP server speaking the OpenAI and Anthropic APIs.
import { Command, Option } from 'commander';
import { LLM_SERVER_DEFAULTS, LlmServer } from '../src/server/index.ts';
import { SIMULATED_DEFAULTS, isMissingPackageError, type ProfileName } from '../src/index.ts';
import { integer, oneOf, rate } from './parse-values.ts';
import { LOG_LEVELS, UsageError, checkLatencyRange, createLogger, oneLineErrors, outageWindow, simulationOptions } from './run-options.ts';
import { systemErrorText } from './stdout.ts';
import { quitNow } from './terminal.ts';

interface ServeFlags {
  host: string;
  port: number;
  rate: number;
  burst: number;
  tpm?: number;
  minLatency: number;
  maxLatency: number;
  profile: ProfileName;
  seed: number;
  outage?: { startMs: number; endMs: number };
  logLevel: (typeof LOG_LEVELS)[number];
}

const EXAMPLES = `
Routes: POST /v1/chat/completions (OpenAI), POST /v1/messages (Anthropic), GET /v1/models, GET /healthz,
GET /metrics (Prometheus). The API key is Authorization: Bearer KEY (OpenAI) or x-api-key: KEY (Anthropic);
each key has its own quota, and every answer carries the vendor's rate-limit headers.

Examples:
  $ news-processor serve                                        on http://127.0.0.1:8080, 10 requests/s per key
  $ news-processor serve --port=0 --rate=2 --burst=2            a free port; the third request in a burst gets 429
  $ news-processor serve --tpm=40000 --profile=production       a token quota too, and real-world failures
  $ news-processor serve --min-latency=0ms --max-latency=0ms --rate=inf    as fast as it goes

The first line on stdout is "listening on http://HOST:PORT"; requests are logged on stderr (pino).
SIGINT or SIGTERM stops taking connections, lets the requests in flight finish and exits 0; a second
one exits at once. Exit codes: 0 stopped cleanly, 2 bad usage or the address cannot be had.`;

/** The `serve` subcommand; `onExit` receives its exit code once it has stopped. */
export function buildServeCommand(onExit: (code: number) => void): Command {
  const command = new Command('serve')
    .description(
      'Run the simulated provider as an HTTP server speaking the OpenAI and Anthropic APIs, with a quota per API key: ' +
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
    .addOption(new Option('--tpm <tokens/min>', 'also limit LLM tokens (prompt plus answer) per minute per API key').argParser(integer(1)));
  for (const option of simulationOptions()) command.addOption(option);
  command
    .addOption(
      new Option('--seed <n>', "seed of the answers' latency and fate, in arrival order")
        .argParser(integer(0))
        .default(SIMULATED_DEFAULTS.seed),
    )
    .addOption(
      new Option('--outage <window>', 'answer 503 (529 on the Anthropic route) in this window after start, e.g. 2s..8s').argParser(
        outageWindow,
      ),
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
  const server = new LlmServer({
    rate: flags.rate,
    burst: flags.burst,
    tokensPerMinute: flags.tpm,
    simulation: {
      minLatencyMs: flags.minLatency,
      maxLatencyMs: flags.maxLatency,
      profile: flags.profile,
      seed: flags.seed,
      outage: flags.outage,
    },
    logger: createLogger(flags),
  });
  // Listening for signals before the server loads: a stop asked for while it starts is not lost.
  const stop = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  let url: string;
  try {
    url = await server.listen({ host: flags.host, port: flags.port });
  } catch (error) {
    if (isMissingPackageError(error)) throw error;
    throw new UsageError(`cannot listen on ${flags.host}:${flags.port}: ${(error as Error).message}`);
  }
  process.stdout.write(`listening on ${url}\n`, (error) => {
    // A script waiting for that line would wait forever: say where the server is on stderr.
    if (error !== null && error !== undefined && (error as NodeJS.ErrnoException).code !== 'EPIPE') {
      process.stderr.write(`warning: standard output: cannot write: ${systemErrorText(error)}; listening on ${url} all the same\n`);
    }
  });

  const signal = await stop;
  process.on('SIGINT', () => quitNow('SIGINT'));
  process.on('SIGTERM', () => quitNow('SIGTERM'));
  process.stderr.write(
    `${signal}: stopping, ${server.inFlight} ${server.inFlight === 1 ? 'request' : 'requests'} in flight (again to quit at once)\n`,
  );
  await server.close();
  return 0;
}
