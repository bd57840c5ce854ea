/**
 * `news-processor serve` under load: requests/s and p99 latency with per-key limiting on (a quota
 * per API key, every request within it) and off (`--rate=inf`), side by side in one run. Target:
 * limiting on keeps ≥ 0.9× the requests/s of limiting off.
 *
 *   npm run bench:serve            (BENCH_QUICK=1 for a shorter run)
 *
 * Two servers run at once in child processes (the compiled command, zero latency, logs at warn), both warmed up; wrk
 * (Debian's package) then loads one at a time, alternating off/on rounds so that drift in the
 * machine's load falls on both alike. Requests cycle through 1,000 API keys. Two requests: the
 * pipeline's summarize task on the OpenAI route, and a tool with a schema the server has never
 * seen on the Anthropic route. Prints a table and writes bench/results/serve.json.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { generateArticles } from '../src/index.ts';
import { builtinRequest } from '../test/requests.ts';
import { formatRatio } from './lib/format.ts';
import { median } from './lib/stats.ts';
import { markdownTable } from './lib/table.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK === '1';
const SECONDS = quick ? 3 : 8;
const ROUNDS = quick ? 1 : 3;
const CONNECTIONS = 32;
const KEYS = 1000;
const TARGET_RATIO = 0.9;

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
] as const;

interface Figures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  failures: number;
}

/** A server in a child process; resolves once it says where it listens. */
function startServer(limiting: Limiting): Promise<{ child: ChildProcess; url: string }> {
  // The compiled command, as users run it (`npm run bench:serve` builds it first).
  const args = ['dist/cmd/news-processor.js', 'serve', '--port=0', '--min-latency=0ms', '--max-latency=0ms', '--log-level=warn'];
  const child = spawn(process.execPath, [...args, ...LIMITS[limiting]], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      out += text;
      const match = /^listening on (\S+)\n/.exec(out);
      if (match !== null) resolve({ child, url: match[1]! });
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code} before listening`)));
  });
}

/** wrk's Lua script: one request body, a key per request from a cycle of KEYS, figures as JSON at the end. */
function wrkScript(scenario: (typeof SCENARIOS)[number]): string {
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
  io.write(string.format('RESULT {"requests":%d,"durationUs":%d,"failures":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout + e.status, latency:percentile(50), latency:percentile(99)))
end
`;
}

const run = promisify(execFile);

async function load(url: string, script: string, seconds: number): Promise<Figures> {
  const { stdout } = await run('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '-s', script, url], { maxBuffer: 1 << 20 });
  const line = /^RESULT (.*)$/m.exec(stdout)?.[1];
  if (line === undefined) throw new Error(`wrk printed no figures:\n${stdout}`);
  const raw = JSON.parse(line) as { requests: number; durationUs: number; failures: number; p50Us: number; p99Us: number };
  return {
    requestsPerSecond: raw.requests / (raw.durationUs / 1e6),
    p50Ms: raw.p50Us / 1000,
    p99Ms: raw.p99Us / 1000,
    requests: raw.requests,
    failures: raw.failures,
  };
}

const scripts = mkdtempSync(join(tmpdir(), 'serve-bench-'));
const servers = { off: await startServer('off'), on: await startServer('on') };
const results: Record<string, { off: Figures[]; on: Figures[] }> = {};
try {
  for (const [index, scenario] of SCENARIOS.entries()) {
    const script = join(scripts, `scenario-${index}.lua`);
    writeFileSync(script, wrkScript(scenario));
    console.error(`${scenario.name}: warming up both servers …`);
    for (const limiting of ['off', 'on'] as const) await load(servers[limiting].url, script, 2);
    const runs: { off: Figures[]; on: Figures[] } = { off: [], on: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so drift in the machine's load falls on both alike.
      const order: Limiting[] = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const limiting of order) {
        const figures = await load(servers[limiting].url, script, SECONDS);
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
  for (const { child } of Object.values(servers)) child.kill('SIGTERM');
  rmSync(scripts, { recursive: true, force: true });
}

const rows: string[][] = [];
const summary: Record<string, unknown> = {};
for (const [name, runs] of Object.entries(results)) {
  const perSecond = (limiting: Limiting) => median(runs[limiting].map((figures) => figures.requestsPerSecond));
  const p99 = (limiting: Limiting) => median(runs[limiting].map((figures) => figures.p99Ms));
  const ratio = perSecond('on') / perSecond('off');
  const verdict = ratio >= TARGET_RATIO ? 'PASS' : 'MISS';
  rows.push([
    name,
    perSecond('off').toFixed(0),
    perSecond('on').toFixed(0),
    formatRatio(ratio),
    `${p99('off').toFixed(2)} ms`,
    `${p99('on').toFixed(2)} ms`,
    `≥ ${TARGET_RATIO}×: ${verdict}`,
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
mkdirSync(join(root, 'bench/results'), { recursive: true });
writeFileSync(
  join(root, 'bench/results/serve.json'),
  `${JSON.stringify({ date: new Date().toISOString(), quick, seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, keys: KEYS, results: summary }, null, 2)}\n`,
);
