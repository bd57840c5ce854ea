import { describe, expect, it } from 'vitest';
import {
  applySamples,
  commandChains,
  cutOutput,
  findBlocks,
  localCommand,
  sampleBody,
  type SampleBlock,
  sharedResources,
  unmarkedShellBlocks,
} from '../../scripts/readme-blocks.ts';

const DOC = [
  '# title',
  '<!-- sample head=1 tail=1 -->',
  '```',
  '$ npm start -- --articles=5',
  'old line 1',
  'old line 2',
  '```',
  'text',
  '<!-- examples -->',
  '```sh',
  '# a comment',
  'npm start -- --articles=1',
  'npm start -- --articles=2 --provider-rate=1   # exit 1',
  '```',
  '```',
  '$ not marked: left alone',
  '```',
];

describe('the runnable blocks of a document', () => {
  it('finds the marked blocks, their commands, options and expected exits', () => {
    const blocks = findBlocks(DOC);
    expect(blocks).toEqual([
      { kind: 'sample', start: 3, end: 6, commands: ['npm start -- --articles=5'], options: { exit: 0, head: 1, tail: 1 } },
      {
        kind: 'examples',
        start: 10,
        end: 13,
        commands: [
          { command: 'npm start -- --articles=1', exit: 0 },
          { command: 'npm start -- --articles=2 --provider-rate=1', exit: 1 },
        ],
      },
    ]);
  });

  it('rewrites a sample with fresh output, cut as marked, and leaves the rest of the document as it was', () => {
    const [sample, examples] = findBlocks(DOC) as [SampleBlock, never];
    const body = sampleBody(sample, ['a\nb\nc\nd\n']);
    expect(body).toEqual(['$ npm start -- --articles=5', 'a', '…', 'd']);
    const { lines, missing } = applySamples(DOC, [{ commands: sample.commands, body }]);
    expect(missing).toEqual([]);
    expect(lines).toEqual([...DOC.slice(0, 3), ...body, ...DOC.slice(6)]);
    expect(findBlocks(lines)[1]).toEqual({ ...(examples as object), start: 11, end: 14 });
  });

  it('finds the block again by its commands in a document edited meanwhile, and says which it could not find', () => {
    const [sample] = findBlocks(DOC) as [SampleBlock];
    const edited = ['new paragraph', 'another', ...DOC];
    const { lines, missing } = applySamples(edited, [
      { commands: sample.commands, body: ['$ npm start -- --articles=5', 'fresh'] },
      { commands: ['npm start -- gone'], body: ['$ npm start -- gone', 'x'] },
    ]);
    expect(lines).toEqual([...edited.slice(0, 5), '$ npm start -- --articles=5', 'fresh', ...edited.slice(8)]);
    expect(missing).toEqual([['npm start -- gone']]);
  });

  it('keeps output that fits, and cuts only what the options say', () => {
    expect(cutOutput('a\nb\nc\n', { exit: 0, head: 1, tail: 1 })).toEqual(['a', 'b', 'c']);
    expect(cutOutput('a\nb\nc\nd', { exit: 0, head: 2 })).toEqual(['a', 'b', '…']);
    expect(cutOutput('a\nb\nc\nd', { exit: 0 })).toEqual(['a', 'b', 'c', 'd']);
  });

  it('refuses a marker without a block, and an unknown option', () => {
    expect(() => findBlocks(['<!-- sample -->', 'text'])).toThrow(/^line 1: a sample marker must be followed by a fenced block/);
    expect(() => findBlocks(['<!-- sample lines=3 -->', '```', '$ x', '```'])).toThrow(/unknown sample option "lines=3"/);
    expect(() => findBlocks(['<!-- sample -->', '```', 'no command', '```'])).toThrow(/needs a "\$ command" line/);
  });

  it('takes a script block whole, and skips a no-run block, which must say why', () => {
    const script = ['<!-- script -->', '```sh', 'serve & S=$!', "cat > a.json <<'JSON'", '{}', 'JSON', 'kill $S', '```'];
    expect(findBlocks(script)).toEqual([
      { kind: 'script', start: 2, end: 7, script: "serve & S=$!\ncat > a.json <<'JSON'\n{}\nJSON\nkill $S" },
    ]);
    expect(findBlocks(['<!-- no-run: needs a key -->', '```sh', 'npm start -- --provider=openai', '```'])).toEqual([]);
    expect(() => findBlocks(['<!-- no-run -->', '```sh', 'x', '```'])).toThrow(/^line 1: a no-run marker says why/);
    expect(() => findBlocks(['<!-- script exit=1 -->', '```sh', 'x', '```'])).toThrow(/^line 1: a script marker takes no option/);
  });

  it('finds the blocks of shell commands that carry no marker: sh, bash, shell, console, or unnamed with a $ line', () => {
    const doc = [
      '```sh',
      'npm test',
      '```',
      '<!-- no-run: needs a key -->',
      '```bash',
      'x',
      '```',
      '```json',
      '{"$ not": "shell"}',
      '```',
      '```',
      'output only',
      '```',
      '```',
      '$ npm start -- serve',
      'listening',
      '```',
      '<!-- examples -->',
      '```shell',
      'y',
      '```',
      '```console',
      '$ z',
      '```',
    ];
    // The sh block on line 1, the unnamed one with a $ line on 14, the console one on 22.
    expect(unmarkedShellBlocks(doc)).toEqual([1, 14, 22]);
  });

  it('chains the commands that share a file, a queue or a port, in the page order; the others run alone', () => {
    expect(
      sharedResources("sed 's/a/b/' fixtures/tasks/x.json > reworded.json && npm start -- --tasks reworded.json --output e.jsonl"),
    ).toEqual(['file:reworded.json', 'file:e.jsonl']);
    expect(sharedResources('npm start -- collect --queue batch1 --output batch1.results.jsonl')).toEqual([
      'file:batch1.results.jsonl',
      'queue:batch1',
    ]);
    expect(sharedResources('node dist/cli/news-processor.js serve --port=18090 & S=$!')).toEqual(['port:18090']);
    expect(sharedResources('npm start -- --log-level=debug --quiet 2>debug.log')).toEqual(['file:debug.log']);
    expect(sharedResources("grep -m1 'limits synced' debug.log")).toEqual(['file:debug.log']);
    expect(sharedResources('npm start -- --articles=20 --cache answers --quiet')).toEqual(['cache:answers']);
    expect(sharedResources('npm start -- --input fixtures/articles.jsonl --config fixtures/pool.json')).toEqual([]);
    const commands = [
      'npm start -- --output flaky.jsonl',
      'npm start -- --articles=5',
      'npm start -- enqueue --queue q',
      'npm start -- --output flaky.jsonl --resume',
      'npm start -- worker --queue q --output w.jsonl',
      'npm start -- collect --output w.jsonl',
    ];
    expect(commandChains(commands)).toEqual([[0, 3], [1], [2, 4, 5]]);
  });

  it('runs npm start -- and npx news-processor as the compiled command, pipes kept', () => {
    expect(localCommand('npm start -- --json | jq .efficiency', '/p/bin.js')).toBe('node /p/bin.js --json | jq .efficiency');
    expect(localCommand('npm start --silent -- bench', '/p/bin.js')).toBe('node /p/bin.js bench');
    expect(localCommand('cat a | npx news-processor --input -', '/p/bin.js')).toBe('cat a | node /p/bin.js --input -');
    expect(localCommand('node dist/cli/news-processor.js serve & SERVE=$!', '/p/bin.js')).toBe('node /p/bin.js serve & SERVE=$!');
  });
});
