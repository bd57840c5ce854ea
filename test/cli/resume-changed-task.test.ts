// --resume after a task changed, end to end: the compiled command over the simulated provider (calls counted
// in its --json figures), against serve (counted on its /metrics), and with --batch.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, linesOf, makeTempDir, runCli, startServe, type Serve } from './run-cli.ts';

const KEY_VARIABLE = 'NP_RESUME_TEST_KEY';
const ENV = { [KEY_VARIABLE]: 'sk-resume-test', OPENAI_API_KEY: undefined };

let temp: Awaited<ReturnType<typeof makeTempDir>>;
let serve: Serve;
beforeAll(async () => {
  [temp, serve] = await Promise.all([makeTempDir(), startServe(['--rate=inf', '--min-latency=0ms', '--max-latency=2ms'])]);
}, 60_000);
afterAll(async () => {
  serve?.run.send('SIGKILL');
  await temp?.remove();
});

/** The chat completions serve has answered so far, as its own /metrics counts them. */
async function servedCalls(): Promise<number> {
  const text = await (await fetch(`${serve.url}/metrics`)).text();
  const counts = [...text.matchAll(/^serve_requests_total\{route="\/v1\/chat\/completions",[^}]*\} (\d+)$/gm)];
  return counts.reduce((sum, [, count]) => sum + Number(count), 0);
}

interface Line {
  id: string;
  status: string;
  outputs: Record<string, unknown>;
  fingerprints?: Record<string, string>;
  costUsd?: number;
}

interface Summary {
  calls: number;
  resumed: number;
  succeeded: number;
  redone: number;
  redoneByTask: Record<string, number>;
  tasks: { name: string; calls: number }[];
}

const OBJECT = (field: string) => ({
  type: 'object',
  properties: { [field]: { type: 'string' } },
  required: [field],
  additionalProperties: false,
});

/** A chain summarize → sentiment → headline, and topic on its own: a change to sentiment reaches headline, not the others. */
function tasksFile(overrides: { sentimentPrompt?: string; topicCap?: number; extra?: boolean } = {}): object {
  return {
    tasks: [
      { name: 'summarize', prompt: 'Summarize {{title}}: {{content}}', schema: OBJECT('summary') },
      {
        name: 'sentiment',
        dependsOn: ['summarize'],
        prompt: overrides.sentimentPrompt ?? 'The sentiment of {{tasks.summarize.summary}}',
        schema: OBJECT('sentiment'),
      },
      {
        name: 'headline',
        dependsOn: ['sentiment'],
        prompt: 'A {{tasks.sentiment.sentiment}} headline for {{title}}',
        schema: OBJECT('headline'),
      },
      { name: 'topic', prompt: 'The topic of {{title}}', schema: OBJECT('topic'), maxOutputTokens: overrides.topicCap ?? 64 },
      ...(overrides.extra === true ? [{ name: 'language', prompt: 'The language of {{title}}', schema: OBJECT('language') }] : []),
    ],
  };
}

async function lines(path: string): Promise<Line[]> {
  return linesOf(await readFile(path, 'utf8')).map((line) => JSON.parse(line) as Line);
}

const callsByTask = (summary: Summary) => Object.fromEntries(summary.tasks.map((task) => [task.name, task.calls]));

/** Runs 4 generated articles through `tasks` into `output` (`--resume` when asked), and returns the --json summary. */
async function run(name: string, tasks: object, resume: boolean, extra: readonly string[] = []): Promise<Summary> {
  const tasksPath = join(temp.dir, `${name}.tasks.json`);
  await writeFile(tasksPath, JSON.stringify(tasks));
  const output = join(temp.dir, `${name}.jsonl`);
  const result = await runCli([
    ...FAST,
    '--articles=4',
    '--tasks',
    tasksPath,
    '--output',
    output,
    ...(resume ? ['--resume'] : []),
    '--json',
    ...extra,
  ]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as Summary;
}

describe.concurrent('news-processor --resume after a task changed', { timeout: 60_000 }, () => {
  it('runs again the changed task and those that depend on it, keeps the others; an unchanged resume makes no call', async () => {
    const first = await run('changed-prompt', tasksFile(), false);
    expect(first.calls).toBe(16);
    const output = join(temp.dir, 'changed-prompt.jsonl');
    const before = await lines(output);
    expect(before.every((line) => Object.keys(line.fingerprints ?? {}).length === 4)).toBe(true);

    const unchanged = await run('changed-prompt', tasksFile(), true);
    expect(unchanged).toMatchObject({ calls: 0, resumed: 4, redone: 0, redoneByTask: {} });

    const changed = await run('changed-prompt', tasksFile({ sentimentPrompt: 'How does {{tasks.summarize.summary}} feel?' }), true);
    expect(callsByTask(changed)).toEqual({ summarize: 0, sentiment: 4, headline: 4, topic: 0 });
    expect(changed).toMatchObject({ calls: 8, resumed: 0, succeeded: 4, redone: 8, redoneByTask: { sentiment: 4, headline: 4 } });
    const after = await lines(output);
    // Each article once, its newest outputs: the unchanged tasks' outputs as they were, the new fingerprints recorded.
    expect(after.map((line) => line.id).sort()).toEqual(['1', '2', '3', '4']);
    for (const line of after) {
      const earlier = before.find((other) => other.id === line.id)!;
      expect(line.status).toBe('succeeded');
      expect(line.outputs.summarize).toEqual(earlier.outputs.summarize);
      expect(line.outputs.topic).toEqual(earlier.outputs.topic);
      expect(line.fingerprints!.sentiment).not.toBe(earlier.fingerprints!.sentiment);
      expect({ ...line.fingerprints, sentiment: '' }).toEqual({ ...earlier.fingerprints, sentiment: '' });
    }

    const again = await run('changed-prompt', tasksFile({ sentimentPrompt: 'How does {{tasks.summarize.summary}} feel?' }), true);
    expect(again).toMatchObject({ calls: 0, resumed: 4, redone: 0 });
  });

  it('a changed output cap redoes that task alone, and the human summary says how many outputs were redone', async () => {
    await run('changed-cap', tasksFile(), false);
    const tasksPath = join(temp.dir, 'changed-cap.tasks.json');
    await writeFile(tasksPath, JSON.stringify(tasksFile({ topicCap: 128 })));
    const output = join(temp.dir, 'changed-cap.jsonl');
    const result = await runCli([...FAST, '--articles=4', '--tasks', tasksPath, '--output', output, '--resume', '--quiet']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Calls: 4 \|/m);
    expect(result.stdout).toMatch(
      /^Redone: 4 task outputs whose task changed since the results file was written, or one it depends on \(topic 4\)$/m,
    );
    expect(linesOf(await readFile(output, 'utf8'))).toHaveLength(4);
  });

  it('a task added to the file runs for the articles that succeeded before, and nothing else does', async () => {
    await run('added-task', tasksFile(), false);
    const added = await run('added-task', tasksFile({ extra: true }), true);
    expect(callsByTask(added)).toEqual({ summarize: 0, sentiment: 0, headline: 0, topic: 0, language: 4 });
    // Nothing was made again: the new task's outputs are new.
    expect(added).toMatchObject({ calls: 4, redone: 0 });
    const after = await lines(join(temp.dir, 'added-task.jsonl'));
    expect(after.every((line) => Object.keys(line.outputs).length === 5)).toBe(true);
  });

  it('lines written before fingerprints were recorded are taken as made by the tasks as they are', async () => {
    await run('no-fingerprints', tasksFile(), false);
    const output = join(temp.dir, 'no-fingerprints.jsonl');
    const stripped = (await lines(output)).map(({ fingerprints: _, ...line }) => JSON.stringify(line));
    await writeFile(output, `${stripped.join('\n')}\n`);
    const resumed = await run('no-fingerprints', tasksFile({ sentimentPrompt: 'Another prompt: {{tasks.summarize.summary}}' }), true);
    expect(resumed).toMatchObject({ calls: 0, resumed: 4, redone: 0 });
  });

  it('an article whose earlier run failed keeps only its outputs of unchanged tasks', async () => {
    // A line as a run stopped after summarize and sentiment left it, with the fingerprints of those tasks as they were.
    await run('partial', tasksFile(), false, ['--articles=1']);
    const output = join(temp.dir, 'partial.jsonl');
    const [done] = await lines(output);
    const { headline: _h, topic: _t, ...outputs } = done!.outputs;
    await writeFile(output, `${JSON.stringify({ ...done, status: 'cancelled', outputs })}\n`);
    const resumed = await run('partial', tasksFile({ sentimentPrompt: 'Changed: {{tasks.summarize.summary}}' }), true, ['--articles=1']);
    expect(callsByTask(resumed)).toEqual({ summarize: 0, sentiment: 1, headline: 1, topic: 1 });
    expect(resumed).toMatchObject({ redone: 1, redoneByTask: { sentiment: 1 } });
  });

  it('--batch --resume: a finished batch run takes the changed task and its dependants up again, nothing else', async () => {
    const tasksPath = join(temp.dir, 'batch.tasks.json');
    const output = join(temp.dir, 'batch.jsonl');
    const batch = async (tasks: object, resume: boolean) => {
      await writeFile(tasksPath, JSON.stringify(tasks));
      const args = ['--batch', '--batch-poll=20ms', '--articles=4', '--tasks', tasksPath, `--output=${output}`, '--json'];
      const result = await runCli([...args, ...(resume ? ['--resume'] : []), '--price-input=1', '--price-output=4']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as {
        rows: number;
        succeeded: number;
        redone: number;
        redoneByTask: Record<string, number>;
        costUsd: number;
      };
    };
    expect(await batch(tasksFile(), false)).toMatchObject({ rows: 16, succeeded: 4 });
    const before = await lines(output);
    expect(await batch(tasksFile(), true)).toMatchObject({ rows: 0, succeeded: 0, redone: 0 });
    const changed = await batch(tasksFile({ sentimentPrompt: 'Batch: {{tasks.summarize.summary}}' }), true);
    expect(changed).toMatchObject({ rows: 8, succeeded: 4, redone: 8, redoneByTask: { sentiment: 4, headline: 4 } });
    // Each article once again, its last line kept, its cost the sum of its lines.
    const after = await lines(output);
    expect(after.map((line) => line.id).sort()).toEqual(['1', '2', '3', '4']);
    for (const line of after) {
      const earlier = before.find((other) => other.id === line.id)!;
      expect(line.outputs.summarize).toEqual(earlier.outputs.summarize);
      expect(line.fingerprints!.sentiment).not.toBe(earlier.fingerprints!.sentiment);
      expect(line.costUsd!).toBeGreaterThan(earlier.costUsd!);
    }
    expect(await batch(tasksFile({ sentimentPrompt: 'Batch: {{tasks.summarize.summary}}' }), true)).toMatchObject({ rows: 0, redone: 0 });
  });

  it('against serve: another --model runs every task again, the same model nothing (counted at serve)', async () => {
    const output = join(temp.dir, 'model.jsonl');
    const against = ['--provider=openai', `--base-url=${serve.url}/v1`, `--api-key-env=${KEY_VARIABLE}`, '--articles=3', '--rate=inf'];
    const served = async (args: readonly string[]) => {
      const before = await servedCalls();
      const result = await runCli([...against, `--output=${output}`, '--quiet', ...args], { env: ENV });
      expect(result.code, result.stderr).toBe(0);
      return (await servedCalls()) - before;
    };
    expect(await served(['--model=model-a'])).toBe(6);
    expect(await served(['--model=model-a', '--resume'])).toBe(0);
    expect(await served(['--model=model-b', '--resume'])).toBe(6);
    expect(await served(['--model=model-b', '--resume'])).toBe(0);
    expect(linesOf(await readFile(output, 'utf8'))).toHaveLength(3);
  });
});
