// The command's word on money no answer told of: a call refused before it was sent cost nothing;
// one reset once sent is "up to $X unknown" — in the summary, in --json, in the results file, and
// in what --resume carries into "in all" and --max-cost.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedUrl, type ScriptedApiServer, startScriptedApiServer } from '../vendors/scripted-api-server.ts';
import { runCli } from './run-cli.ts';

const KEY = 'sk-unknown-cost-0123456789';
const ENV = { NP_TEST_KEY: KEY, OPENAI_API_KEY: undefined };
const PRICED = ['--provider=openai', '--api-key-env=NP_TEST_KEY', '--price-input=0.4', '--price-output=1.6', '--max-attempts=2'];

interface Figures {
  readonly costUsd: number;
  readonly unknownCostUsd: number;
  readonly earlierCostUsd: number;
  readonly earlierUnknownCostUsd: number;
  readonly stoppedBy?: { readonly by: string };
  readonly budget?: { readonly spentUsd: number; readonly unknownUsd: number };
}

let server: ScriptedApiServer;
let dir: string;
beforeAll(async () => {
  server = await startScriptedApiServer({ apiKey: KEY });
  dir = await mkdtemp(join(tmpdir(), 'np-unknown-cost-'));
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('news-processor, for calls no answer came back from', () => {
  it('a port where nothing listens: Cost $0, the --max-cost run not stopped by calls that never left', async () => {
    const run = await runCli([...PRICED, `--base-url=${await refusedUrl()}`, '--articles=3', '--max-cost=0.001', '--json'], { env: ENV });
    const figures = JSON.parse(run.stdout) as Figures;
    expect(run.code).toBe(1);
    expect(figures.stoppedBy).toBeUndefined();
    expect(figures).toMatchObject({ costUsd: 0, unknownCostUsd: 0, budget: { spentUsd: 0, unknownUsd: 0 } });
  });

  it('a connection reset once the request was sent: "up to $X unknown" apart from the cost, in --json, the results file and a resumed run’s "in all"', async () => {
    server.cue = 'reset';
    const output = join(dir, 'reset.jsonl');
    const first = await runCli([...PRICED, `--base-url=${server.openAiUrl}`, '--articles=2', `--output=${output}`, '--json'], { env: ENV });
    const figures = JSON.parse(first.stdout) as Figures;
    expect(figures.costUsd).toBe(0);
    expect(figures.unknownCostUsd).toBeGreaterThan(0);
    const lines = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { costUsd: number; unknownCostUsd: number });
    expect(lines.map((line) => line.costUsd)).toEqual([0, 0]);
    expect(lines.reduce((sum, line) => sum + line.unknownCostUsd, 0)).toBeCloseTo(figures.unknownCostUsd, 9);

    const unknown = `$${Number(figures.unknownCostUsd.toPrecision(3))}`;
    const again = await runCli(
      [...PRICED, `--base-url=${server.openAiUrl}`, '--articles=2', `--output=${output}`, '--resume', '--max-cost=1'],
      {
        env: ENV,
      },
    );
    const all = `$${Number((2 * figures.unknownCostUsd).toPrecision(3))}`;
    expect(again.stdout).toContain(`Cost: $0 this run (up to ${unknown} unknown), $0 in all (up to ${all} unknown) of a $1.00 budget`);

    const third = await runCli([...PRICED, `--base-url=${server.openAiUrl}`, '--articles=2', `--output=${output}`, '--resume', '--json'], {
      env: ENV,
    });
    const resumed = JSON.parse(third.stdout) as Figures;
    expect(resumed.earlierCostUsd).toBe(0);
    expect(resumed.earlierUnknownCostUsd).toBeCloseTo(2 * figures.unknownCostUsd, 9);
  });

  it('a run with no trouble says no more than its cost', async () => {
    server.cue = 'ok';
    const run = await runCli([...PRICED, `--base-url=${server.openAiUrl}`, '--articles=1'], { env: ENV });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Cost: \$[\d.]+$/m);
  });
});
