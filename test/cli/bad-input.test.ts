import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, makeTempDir, runCli, type CliResult } from './run-cli.ts';

/** A usage or input error: exit 2, nothing on stdout, one `error: …` line on stderr and no stack trace. */
function expectUsageError(result: CliResult, mentions: readonly RegExp[]): void {
  expect(result.timedOut, 'the run hung').toBe(false);
  expect(result.stdout).toBe('');
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr.split('\n'), `stderr: ${result.stderr}`).toHaveLength(2);
  expect(result.stderr).toMatch(/^error: \S.*\n$/);
  for (const mention of mentions) expect(result.stderr).toMatch(mention);
  expect(result.code).toBe(2);
}

// Each row: the flags, and what the one-line message must name. The FAST flags come first so
// that a case's own flags win where they repeat one (commander keeps the last value).
const BAD_FLAGS: ReadonlyArray<readonly [label: string, args: readonly string[], mentions: readonly RegExp[]]> = [
  ['non-numeric --workers', ['--workers=abc'], [/--workers/, /'abc'/]],
  ['non-numeric --rate', ['--rate=abc'], [/--rate/, /'abc'/]],
  ['--rate=NaN', ['--rate=NaN'], [/--rate/, /NaN/]],
  ['--rate=0 (suggests inf)', ['--rate=0'], [/--rate/, /'0'/, /\binf\b/]],
  ['negative --rate', ['--rate=-1'], [/--rate/, /'-1'/]],
  ['--burst=0', ['--burst=0'], [/--burst/, /'0'/]],
  ['fractional --burst', ['--burst=1.5'], [/--burst/, /'1\.5'/]],
  ['--workers=0', ['--workers=0'], [/--workers/, /'0'/]],
  ['--articles=0', ['--articles=0'], [/--articles/, /'0'/]],
  ['--articles=1e999 (Infinity)', ['--articles=1e999'], [/--articles/, /1e999/]],
  ['--timeout=0s', ['--timeout=0s'], [/--timeout/, /'0s'/]],
  ['negative --timeout', ['--timeout=-1s'], [/--timeout/, /'-1s'/]],
  ['--timeout without a unit', ['--timeout=5'], [/--timeout/, /unit/]],
  ['--call-timeout=0s', ['--call-timeout=0s'], [/--call-timeout/, /'0s'/]],
  ['--call-timeout no shorter than --timeout', ['--timeout=2s', '--call-timeout=2s'], [/--call-timeout \(2s\)/, /--timeout \(2s\)/]],
  ['--min-latency above --max-latency', ['--min-latency=900ms', '--max-latency=800ms'], [/--min-latency/, /--max-latency/]],
  ['unknown flag', ['--frobnicate'], [/--frobnicate/]],
  ['misspelt flag (suggestion on the same line)', ['--artcles=5'], [/--artcles/, /--articles/]],
  ['unknown profile', ['--profile=chaos'], [/--profile/, /chaos/, /stress/]],
  ['--input together with --articles', ['--input', 'fixtures/articles.jsonl', '--articles=3'], [/--input/, /--articles/]],
  ['--skip-invalid without --input', ['--skip-invalid'], [/--skip-invalid/, /--input/]],
  ['--input-format without --input', ['--input-format=csv'], [/--input-format/, /--input/]],
  ['unknown --input-format', ['--input', '-', '--input-format=xml'], [/--input-format/, /'xml'/, /jsonl, json, csv/]],
  [
    'a prompt field generated articles lack',
    ['--tasks', 'fixtures/tasks.yaml'],
    [/task credit's prompt reads \{\{author\}\}/, /generated articles/, /--input/],
  ],
  ['--provider-burst without --provider-rate', ['--provider-burst=2'], [/--provider-burst/, /--provider-rate/]],
  // A call reserves its prompt plus --max-output-tokens: no call could fit, said before the run.
  ['--max-output-tokens above --tpm', ['--tpm=1000', '--max-output-tokens=2000'], [/--tpm=1000/, /--max-output-tokens \(2000\)/]],
  ['--tpm no larger than the default --max-output-tokens', ['--tpm=256'], [/--tpm=256/, /--max-output-tokens \(256\)/]],
  [
    '--output the same file as --input',
    ['--input', 'fixtures/articles.jsonl', '--output', 'fixtures/articles.jsonl'],
    [/--output/, /--input/],
  ],
  ['missing --input file', ['--input', 'fixtures/does-not-exist.jsonl'], [/fixtures\/does-not-exist\.jsonl/, /ENOENT|no such file/]],
  ['--input that is a directory', ['--input', 'fixtures'], [/fixtures/, /EISDIR|directory/]],
];

// The malformed fixtures (fixtures/README.md): the message names file:line and the reason.
const BAD_FILES: ReadonlyArray<readonly [file: string, line: number, reason: RegExp]> = [
  ['invalid-json.jsonl', 3, /invalid JSON \(.+\)/],
  ['missing-id.jsonl', 2, /missing "id"/],
  ['empty-content.jsonl', 2, /article has no text \(empty "content"\)/],
  ['wrong-type.jsonl', 2, /"title" must be a string, got 42/],
  ['duplicate-ids.jsonl', 4, /duplicate id "12" \(first seen on line 2\)/],
  ['not-an-object.jsonl', 2, /expected a JSON object, got \[1,2\]/],
  ['mixed.jsonl', 3, /invalid JSON \(.+\)/],
  ['unclosed-quote.csv', 2, /invalid CSV \(a quoted field is never closed\)/],
  ['field-count.csv', 3, /expected 3 fields \(the header's\), got 4/],
  ['no-id-column.csv', 2, /missing "id"/],
  ['invalid-element.json', 3, /invalid JSON \(.+\)/],
  ['not-an-array.json', 1, /expected a JSON array of articles \(\[…\]\), got "\{"/],
];

describe.concurrent('news-processor - bad flags: exit 2, one line naming the flag', { timeout: 60_000 }, () => {
  it.each(BAD_FLAGS)('%s', async (_label, args, mentions) => {
    expectUsageError(await runCli([...FAST, ...args]), mentions);
  });
});

describe.concurrent('news-processor --input - malformed files: exit 2, one line with file:line', { timeout: 60_000 }, () => {
  it.each(BAD_FILES)('fixtures/bad/%s fails at line %i', async (file, line, reason) => {
    const result = await runCli([...FAST, '--input', `fixtures/bad/${file}`]);
    const where = new RegExp(`fixtures/bad/${file.replace('.', '\\.')}:${line}: `);
    expectUsageError(result, [where, reason]);
  });
});

describe.concurrent('fixtures/README.md - the messages it quotes', { timeout: 60_000 }, () => {
  // Its table of bad files: | `file` | line | problem | `message` … |, one row per file.
  const rows = async () =>
    [...(await readFile('fixtures/README.md', 'utf8')).matchAll(/^\| `([\w-]+\.(?:jsonl|csv|json))` +\| +\d+ +\|[^|]+\| `([^`]+)`/gm)].map(
      ([, file, message]) => [file!, message!] as const,
    );

  it('quotes each bad file the tool reads exactly as it says it (up to the … of a message that varies)', async () => {
    const quoted = await rows();
    expect(quoted.map(([file]) => file).sort()).toEqual(
      BAD_FILES.map(([file]) => file)
        .filter((file) => file !== 'mixed.jsonl')
        .sort(),
    );
    for (const [file, message] of quoted) {
      const result = await runCli([...FAST, '--input', `fixtures/bad/${file}`]);
      const [before, after] = message.split('…');
      if (after === undefined) expect(result.stderr, file).toBe(`error: ${message}\n`);
      else expect(result.stderr, file).toMatch(new RegExp(`^error: ${escapeRegExp(before!)}.+${escapeRegExp(after)}\n$`));
    }
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe.concurrent('news-processor - a bad input loses nothing', { timeout: 60_000 }, () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    temp = await makeTempDir();
  });
  afterAll(async () => {
    await temp.remove();
  });

  it('leaves an existing --output file untouched when the input is bad', async () => {
    const output = join(temp.dir, 'previous-results.jsonl');
    const previous = '{"id":"1","status":"succeeded","attempts":2}\n';
    await writeFile(output, previous);
    const result = await runCli([...FAST, '--input', 'fixtures/bad/duplicate-ids.jsonl', '--output', output]);
    expectUsageError(result, [/fixtures\/bad\/duplicate-ids\.jsonl:4: /]);
    expect(await readFile(output, 'utf8')).toBe(previous);
  });
});

describe.concurrent('news-processor --input - an empty file', { timeout: 60_000 }, () => {
  it('holds no article: one line, exit 2 — a run of nothing is no success (test/cli/input-empty.test.ts has the rest)', async () => {
    const result = await runCli([...FAST, '--input', 'fixtures/bad/empty.jsonl', '--json']);
    expectUsageError(result, [/^error: fixtures\/bad\/empty\.jsonl: holds no article$/m]);
  });
});

describe.concurrent('news-processor - a line without a field the tasks read', { timeout: 60_000 }, () => {
  it('fails its article before any call, a dead letter naming the field; the rest run; exit 1', async () => {
    const result = await runCli([...FAST, '--input', 'fixtures/bad/missing-content.jsonl', '--json']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({
      articles: 3,
      succeeded: 2,
      failed: 1,
      calls: 4,
      failureReasons: { MissingFieldError: 1 },
    });
  });

  it('is skipped and counted with --skip-invalid, said by file:line', async () => {
    const result = await runCli([...FAST, '--input', 'fixtures/bad/missing-content.jsonl', '--skip-invalid', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ articles: 2, succeeded: 2, skippedLines: 1 });
    expect(result.stderr).toBe('warning: skipping fixtures/bad/missing-content.jsonl:2: missing field "content"\n');
  });
});

describe.concurrent('news-processor --skip-invalid', { timeout: 60_000 }, () => {
  it('processes the 7 good articles of fixtures/bad/mixed.jsonl and warns about the 3 bad lines', async () => {
    const result = await runCli([...FAST, '--input', 'fixtures/bad/mixed.jsonl', '--skip-invalid', '--json']);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ articles: 7, succeeded: 7, failed: 0, cancelled: 0, skippedLines: 3 });
    const warnings = result.stderr.split('\n').filter((line) => line !== '');
    expect(warnings).toEqual([
      expect.stringMatching(/^warning: .*fixtures\/bad\/mixed\.jsonl:3: invalid JSON/),
      expect.stringMatching(/^warning: .*fixtures\/bad\/mixed\.jsonl:6: missing field "content"/),
      expect.stringMatching(/^warning: .*fixtures\/bad\/mixed\.jsonl:9: duplicate id "2"/),
    ]);
  });

  it('reports the skipped lines in the text summary', async () => {
    const result = await runCli([...FAST, '--input', 'fixtures/bad/mixed.jsonl', '--skip-invalid', '--quiet']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Rate limit=inf\/s burst=3 \| 7 articles \| Succeeded:7 Failed:0 \| /m);
    expect(result.stdout).toMatch(/^Skipped input lines: 3$/m);
  });
});

describe.concurrent('news-processor --skip-invalid - every line skipped', { timeout: 60_000 }, () => {
  let temp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    temp = await makeTempDir();
  });
  afterAll(async () => {
    await temp.remove();
  });

  it('a file: exit 2, one line saying no valid article was read and how many were skipped, no --output written', async () => {
    const output = join(temp.dir, 'results.jsonl');
    const result = await runCli([...FAST, '--input', 'fixtures/bad/all-invalid.jsonl', '--skip-invalid', '--output', output]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n').filter((line) => !line.startsWith('warning: skipping '))).toEqual([
      'error: fixtures/bad/all-invalid.jsonl: no valid article read: all 3 lines were invalid and skipped',
      '',
    ]);
    await expect(readFile(output, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('standard input: exit 2 at its end, the same line', async () => {
    const result = await runCli([...FAST, '--input', '-', '--skip-invalid', '--quiet'], {
      stdin: await readFile('fixtures/bad/all-invalid.jsonl'),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^error: stdin: no valid article read: all 3 lines were invalid and skipped; the run was stopped there$/m,
    );
    expect(result.stdout).toMatch(/ 0 articles .*\| Succeeded:0 Failed:0 /);
  });
});

describe.concurrent('news-processor - a field a prompt reads, missing from the input', { timeout: 60_000 }, () => {
  it('from the first article of a JSONL file: exit 2 before any call, naming the line, the article, the field and the task', async () => {
    const result = await runCli([...FAST, '--input', 'fixtures/articles.jsonl', '--tasks', 'fixtures/tasks.yaml']);
    expectUsageError(result, []);
    expect(result.stderr).toBe(
      'error: fixtures/articles.jsonl:1: the first article, "101", has no field "author" that task credit\'s prompt reads ({{author}})\n',
    );
  });

  it("from a CSV file's header row, with --skip-invalid too", async () => {
    for (const skip of [[], ['--skip-invalid']]) {
      const result = await runCli([...FAST, '--input', 'fixtures/bad/field-count.csv', '--tasks', 'fixtures/tasks.yaml', ...skip]);
      expectUsageError(result, []);
      expect(result.stderr).toBe(
        'error: fixtures/bad/field-count.csv:1: the header has no column "author" that task credit\'s prompt reads ({{author}})\n',
      );
    }
  });

  it('from a later article: its dead letter, and the summary names the field and how many lacked it, under --quiet too', async () => {
    const quiet = await runCli([...FAST, '--input', 'fixtures/bad/missing-content.jsonl', '--quiet']);
    expect(quiet.code).toBe(1);
    expect(quiet.stdout).toMatch(
      /^Missing field "content": 1 article lacked it \(task summarize reads \{\{content\}\}\), a dead letter each$/m,
    );
    const json = await runCli([...FAST, '--input', 'fixtures/bad/missing-content.jsonl', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ failed: 1, missingFields: { content: 1 } });
  });
});
