/**
 * `news-processor serve` under load, each figure with limiting on (a quota per API key, every
 * request within it) and off (`--rate=inf`), side by side in one run. Target: limiting on keeps
 * ≥ 0.9× of limiting off.
 *
 * - Whole answers: requests/s and p99 latency of two requests — the pipeline's summarize task on the
 *   OpenAI route, and a tool with a schema the server has never seen on the Anthropic route.
 * - Streams: 1,000 streamed answers held open at once (1,000 connections), paced at 10 tokens/s:
 *   streams and chunks per second, how many were held at once (Little's law: streams/s × mean
 *   duration), and the p99 stream duration beside the pacing's own.
 * - This project's client against serve's stated quota (40/s, a second's burst): a run at twice it,
 *   fixed, `--adaptive` and `--sync-headers`: the share of the quota reached and of 429s.
 *
 *   npm run bench:serve            (BENCH_QUICK=1 for a shorter run)
 *
 * The servers run in child processes (the compiled command, logs at warn), warmed up; wrk
 * (Debian's package) loads one at a time, alternating off/on rounds so that drift in the machine's
 * load falls on both alike; on / off is the median of each round's ratio. Requests cycle through
 * 1,000 API keys. Prints tables and writes
 * bench/results/serve.json.
 */

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { generateArticles, runPipeline, type ProviderSetup } from '../src/index.ts';
import { OpenAiProvider } from '../src/vendors/index.ts';
import { requestLimit } from '../src/quota/provider-limits.ts';
import { builtinRequest } from '../test/requests.ts';
import { formatRatio } from './lib/format.ts';
import { startServe } from './lib/serve.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
const SECONDS = quick ? 3 : 8;
const ROUNDS = quick ? 1 : 3;
const CONNECTIONS = 32;
const KEYS = 1000;
const TARGET_RATIO = 0.9;

/** Streams held at once, and their pace. */
const STREAM_CONNECTIONS = 1000;
const STREAM_TOKENS_PER_SECOND = 10;
/** The quota the client runs meet: stated per minute in the headers, a second's worth of burst. */
const CLIENT_QUOTA = 40;
const CLIENT_ARTICLES = quick ? 100 : 200;

const LIMITS = {
  off: ['--rate=inf'],
  // Every key well within its quota: the limiter is consulted (and the headers computed) on every request, none refused.
  on: ['--rate=1000', '--burst=1000'],
} as const;
type Limiting = keyof typeof LIMITS;

const [article] = generateArticles(1, { seed: 1 });
const { prompt, schema } = builtinRequest('summarize', article!.id, article!.title, article!.content);
const SCENARIOS = [
  {
    name: 'OpenAI route, the summarize task',
    path: '/v1/chat/completions',
    keyHeader: 'Authorization',
    keyPrefix: 'Bearer key-',
    body: {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: prompt }],
      response_format: { type: 'json_schema', json_schema: { name: 'summarize', schema, strict: true } },
    },
  },
  {
    name: 'Anthropic route, a tool with a new schema',
    path: '/v1/messages',
    keyHeader: 'x-api-key',
    keyPrefix: 'key-',
    body: {
      model: 'claude-haiku',
      max_tokens: 256,
      messages: [{ role: 'user', content: prompt }],
      tools: [
        {
          name: 'record',
          input_schema: {
            type: 'object',
            properties: {
              headline: { type: 'string', maxLength: 80 },
              people: { type: 'array', items: { type: 'string' }, maxItems: 3 },
              published: { type: 'string', format: 'date' },
              importance: { type: 'integer', minimum: 1, maximum: 5 },
            },
            required: ['headline', 'people', 'published', 'importance'],
            additionalProperties: false,
          },
        },
      ],
      tool_choice: { type: 'tool', name: 'record' },
    },
  },
  {
    name: 'streamed chat completions, 1,000 at once',
    path: '/v1/chat/completions',
    keyHeader: 'Authorization',
    keyPrefix: 'Bearer key-',
    stream: true,
    body: {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: article!.content }],
      stream: true,
      stream_options: { include_usage: true },
    },
  },
] as const;
type Scenario = (typeof SCENARIOS)[number];
const isStream = (scenario: Scenario) => 'stream' in scenario;

interface Figures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  failures: number;
  meanMs: number;
}

/** serve as this benchmark runs it: with `flags`, and only warnings on stderr. */
const startServer = (flags: readonly string[]) => startServe(['--log-level=warn', ...flags]);

const ZERO_LATENCY = ['--min-latency=0ms', '--max-latency=0ms'];

/** wrk's Lua script: one request body, a key per request from a cycle of KEYS, figures as JSON at the end. */
function wrkScript(scenario: Scenario): string {
  return `
local keys = {}
for i = 1, ${KEYS} do keys[i] = "${scenario.keyPrefix}" .. i end
local body = [==[${JSON.stringify(scenario.body)}]==]
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "${scenario.path}", { ["Content-Type"] = "application/json", ["${scenario.keyHeader}"] = keys[(n % ${KEYS}) + 1], ["anthropic-version"] = "2023-06-01" }, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('RESULT {"requests":%d,"durationUs":%d,"failures":%d,"p50Us":%d,"p99Us":%d,"meanUs":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout + e.status, latency:percentile(50), latency:percentile(99), latency.mean))
end
`;
}

const run = promisify(execFile);

async function load(url: string, script: string, seconds: number, connections: number): Promise<Figures> {
  const threads = connections > CONNECTIONS ? 2 : 1;
  const { stdout } = await run('wrk', [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--timeout', '30s', '-s', script, url], {
    maxBuffer: 1 << 20,
  });
  const line = /^RESULT (.*)$/m.exec(stdout)?.[1];
  if (line === undefined) throw new Error(`wrk printed no figures:\n${stdout}`);
  const raw = JSON.parse(line) as { requests: number; durationUs: number; failures: number; p50Us: number; p99Us: number; meanUs: number };
  return {
    requestsPerSecond: raw.requests / (raw.durationUs / 1e6),
    p50Ms: raw.p50Us / 1000,
    p99Ms: raw.p99Us / 1000,
    meanMs: raw.meanUs / 1000,
    requests: raw.requests,
    failures: raw.failures,
  };
}

/** The events one streamed answer has, and the tokens they pace: read off one stream. */
async function streamShape(url: string, body: unknown): Promise<{ events: number; tokens: number }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer key-shape' },
    body: JSON.stringify(body),
  });
  const events = (await response.text()).split('\n\n').filter((block) => block.startsWith('data: '));
  const tokens = events.filter((block) => /"delta":\{"content":"/.test(block)).length;
  return { events: events.length, tokens };
}

const scripts = mkdtempSync(join(tmpdir(), 'serve-bench-'));
const whole = { off: await startServer([...ZERO_LATENCY, ...LIMITS.off]), on: await startServer([...ZERO_LATENCY, ...LIMITS.on]) };
const paced = [...ZERO_LATENCY, `--tokens-per-second=${STREAM_TOKENS_PER_SECOND}`];
const streaming = { off: await startServer([...paced, ...LIMITS.off]), on: await startServer([...paced, ...LIMITS.on]) };
const results: Record<string, { off: Figures[]; on: Figures[] }> = {};
let shape = { events: 0, tokens: 0 };
try {
  for (const [index, scenario] of SCENARIOS.entries()) {
    const servers = isStream(scenario) ? streaming : whole;
    const connections = isStream(scenario) ? STREAM_CONNECTIONS : CONNECTIONS;
    if (isStream(scenario)) shape = await streamShape(servers.off.url, scenario.body);
    const script = join(scripts, `scenario-${index}.lua`);
    writeFileSync(script, wrkScript(scenario));
    console.error(`${scenario.name}: warming up both servers …`);
    for (const limiting of ['off', 'on'] as const) await load(servers[limiting].url, script, isStream(scenario) ? 4 : 2, connections);
    const runs: { off: Figures[]; on: Figures[] } = { off: [], on: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so drift in the machine's load falls on both alike.
      const order: Limiting[] = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const limiting of order) {
        const figures = await load(servers[limiting].url, script, SECONDS, connections);
        if (figures.failures > 0) throw new Error(`${scenario.name}, limiting ${limiting}: ${figures.failures} failed requests`);
        runs[limiting].push(figures);
        console.error(
          `  round ${round + 1}, limiting ${limiting}: ${figures.requestsPerSecond.toFixed(0)} req/s, p99 ${figures.p99Ms.toFixed(2)} ms`,
        );
      }
    }
    results[scenario.name] = runs;
  }
} finally {
  for (const { run } of [...Object.values(whole), ...Object.values(streaming)]) run.send('SIGTERM');
  rmSync(scripts, { recursive: true, force: true });
}

/** This project's client at twice serve's quota: what each way of meeting a stated quota reaches. */
interface ClientRun {
  readonly name: string;
  readonly setup: Pick<ProviderSetup, 'adaptive' | 'syncHeaders'>;
}
const CLIENT_RUNS: readonly ClientRun[] = [
  { name: 'fixed at twice the quota', setup: {} },
  { name: '--adaptive', setup: { adaptive: {} } },
  { name: '--sync-headers', setup: { syncHeaders: true } },
];
const clientRows: { name: string; achieved: number; share: number; rateLimitedShare: number; calls: number; finalRate: number }[] = [];
const quotaServer = await startServer([`--rate=${CLIENT_QUOTA}`, `--burst=${CLIENT_QUOTA}`, '--min-latency=10ms', '--max-latency=30ms']);
try {
  for (const [index, { name, setup }] of CLIENT_RUNS.entries()) {
    console.error(`client against serve's quota of ${CLIENT_QUOTA}/s: ${name} …`);
    // A key of its own per run: each meets the quota fresh.
    const provider = new OpenAiProvider({ apiKey: `sk-bench-quota-${index}`, baseUrl: `${quotaServer.url}/v1` });
    const summary = await runPipeline({
      source: generateArticles(CLIENT_ARTICLES),
      providers: [{ provider, limits: requestLimit(2 * CLIENT_QUOTA, 1), ...setup }],
      // Every 429 retried: the run measures the rate, not give-ups.
      retry: { maxAttempts: 100 },
      workers: 16,
      timeoutMs: 120_000,
    });
    if (summary.succeeded !== CLIENT_ARTICLES) throw new Error(`${name}: ${summary.succeeded} of ${CLIENT_ARTICLES} succeeded`);
    const [figures] = summary.providers;
    const succeeded = summary.calls - summary.rateLimited;
    // The most a quota admits in a run is its burst plus its rate over the run's time.
    const admissible = CLIENT_QUOTA + (CLIENT_QUOTA * summary.elapsedMs) / 1000;
    clientRows.push({
      name,
      achieved: (succeeded * 1000) / summary.elapsedMs,
      share: succeeded / admissible,
      rateLimitedShare: summary.rateLimited / summary.calls,
      calls: summary.calls,
      finalRate: figures!.finalRate,
    });
  }
} finally {
  quotaServer.run.send('SIGTERM');
}

const rows: string[][] = [];
const streamRows: string[][] = [];
const summary: Record<string, unknown> = {};
for (const [name, runs] of Object.entries(results)) {
  const perSecond = (limiting: Limiting) => median(runs[limiting].map((figures) => figures.requestsPerSecond));
  const p99 = (limiting: Limiting) => median(runs[limiting].map((figures) => figures.p99Ms));
  const meanMs = (limiting: Limiting) => median(runs[limiting].map((figures) => figures.meanMs));
  // Each round ran on and off back to back: the median of their ratios leaves out the drift between rounds.
  const ratio = median(runs.on.map((figures, round) => figures.requestsPerSecond / runs.off[round]!.requestsPerSecond));
  const verdict = `≥ ${TARGET_RATIO}×: ${ratio >= TARGET_RATIO ? 'PASS' : 'MISS'}`;
  const scenario = SCENARIOS.find((candidate) => candidate.name === name)!;
  if (isStream(scenario)) {
    const held = (limiting: Limiting) => (perSecond(limiting) * meanMs(limiting)) / 1000;
    const chunks = (limiting: Limiting) => perSecond(limiting) * shape.events;
    streamRows.push([
      name,
      `${held('off').toFixed(0)} / ${held('on').toFixed(0)}`,
      `${perSecond('off').toFixed(0)} / ${perSecond('on').toFixed(0)}`,
      `${chunks('off').toFixed(0)} / ${chunks('on').toFixed(0)}`,
      formatRatio(ratio),
      `${(p99('off') / 1000).toFixed(2)} / ${(p99('on') / 1000).toFixed(2)} s`,
      verdict,
    ]);
    summary[name] = {
      ratio,
      eventsPerStream: shape.events,
      tokensPerStream: shape.tokens,
      pacedMs: ((shape.tokens - 1) * 1000) / STREAM_TOKENS_PER_SECOND,
      streamsPerSecond: { off: perSecond('off'), on: perSecond('on') },
      chunksPerSecond: { off: chunks('off'), on: chunks('on') },
      held: { off: held('off'), on: held('on') },
      p99Ms: { off: p99('off'), on: p99('on') },
      runs,
    };
    continue;
  }
  rows.push([
    name,
    perSecond('off').toFixed(0),
    perSecond('on').toFixed(0),
    formatRatio(ratio),
    `${p99('off').toFixed(2)} ms`,
    `${p99('on').toFixed(2)} ms`,
    verdict,
  ]);
  summary[name] = {
    ratio,
    requestsPerSecond: { off: perSecond('off'), on: perSecond('on') },
    p99Ms: { off: p99('off'), on: p99('on') },
    runs,
  };
}
console.log(
  `serve, zero latency, ${CONNECTIONS} connections (wrk), ${KEYS} API keys; medians of ${ROUNDS} ${SECONDS}-s runs per side, interleaved`,
);
console.log(markdownTable(['request', 'req/s, limiting off', 'req/s, limiting on', 'on / off', 'p99 off', 'p99 on', 'target'], rows));
console.log(
  `\nstreams: ${STREAM_CONNECTIONS} connections (wrk), each a stream of ${shape.events} events (${shape.tokens} tokens at ${STREAM_TOKENS_PER_SECOND}/s: ${(((shape.tokens - 1) * 1000) / STREAM_TOKENS_PER_SECOND / 1000).toFixed(2)} s paced), first token at once; off / on`,
);
console.log(markdownTable(['request', 'held at once', 'streams/s', 'chunks/s', 'on / off', 'p99 stream', 'target'], streamRows));
console.log(
  `\nthis project's client (runPipeline, OpenAI SDK, ${CLIENT_ARTICLES} articles, 16 workers) at ${2 * CLIENT_QUOTA}/s against serve --rate=${CLIENT_QUOTA} --burst=${CLIENT_QUOTA} (stated as ${CLIENT_QUOTA * 60}/min); the quota admits its burst plus ${CLIENT_QUOTA}/s over the run`,
);
console.log(
  markdownTable(
    ['run', 'calls', 'succeeded /s', '% of what the quota admits', '429 %', 'final rate /s', 'target (≥ 90 %, < 3 % 429s)'],
    clientRows.map((row) => [
      row.name,
      String(row.calls),
      row.achieved.toFixed(2),
      (100 * row.share).toFixed(1),
      (100 * row.rateLimitedShare).toFixed(2),
      row.finalRate.toFixed(1),
      row.name.startsWith('--') ? (row.share >= 0.9 && row.rateLimitedShare < 0.03 ? 'PASS' : 'MISS') : '',
    ]),
  ),
);
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(
  join(root, 'bench/results/serve.json'),
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      quick,
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      streamConnections: STREAM_CONNECTIONS,
      keys: KEYS,
      results: summary,
      client: { quota: CLIENT_QUOTA, articles: CLIENT_ARTICLES, runs: clientRows },
    },
    null,
    2,
  )}\n`,
);
