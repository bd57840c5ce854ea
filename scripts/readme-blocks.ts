// A document's runnable blocks: where they are, what they run, and how a block is rewritten with
// fresh output. Pure text in, text out; scripts/readme.ts does the running.

/** How a sample's output is cut to fit the page. */
export interface SampleOptions {
  /** Keep this many lines from the start of each command's output (with `tail`, an elision between). */
  readonly head?: number | undefined;
  /** Keep this many lines from the end. */
  readonly tail?: number | undefined;
  /** The exit code the commands are expected to end with. Default 0. */
  readonly exit: number;
}

/** A fenced block after `<!-- sample … -->`: `$ command` lines, each followed by its output. */
export interface SampleBlock {
  readonly kind: 'sample';
  /** The document's lines [start, end) that hold the block's body, between the fences. */
  readonly start: number;
  readonly end: number;
  readonly commands: readonly string[];
  readonly options: SampleOptions;
}

/** A fenced block after `<!-- examples -->`: each command line is run and must end as expected. */
export interface ExamplesBlock {
  readonly kind: 'examples';
  readonly start: number;
  readonly end: number;
  /** Each command and the exit code it should end with (`# exit 1` at the end of its line; default 0). */
  readonly commands: readonly { readonly command: string; readonly exit: number }[];
}

/**
 * A fenced block after `<!-- script -->`: the whole block is one bash script (`set -e`, `pipefail`),
 * run at once, which must exit 0 and stop what it started in the background (servers it `kill`s).
 */
export interface ScriptBlock {
  readonly kind: 'script';
  readonly start: number;
  readonly end: number;
  /** The block's lines, as written. */
  readonly script: string;
}

export type RunnableBlock = SampleBlock | ExamplesBlock | ScriptBlock;

const MARKER = /^<!--\s*(sample|examples|script|no-run)\b(.*?)-->\s*$/;
/** The info strings of a fenced block of shell commands. */
const SHELL_FENCE = /^```\s*(sh|bash|shell|console|zsh)\s*$/;
const ELISION = '…';

/** Finds the marked blocks; throws on a marker with no fenced block right after it, or a bad option. */
export function findBlocks(lines: readonly string[]): RunnableBlock[] {
  const blocks: RunnableBlock[] = [];
  lines.forEach((line, index) => {
    const marker = MARKER.exec(line);
    if (marker === null) return;
    const fence = index + 1;
    if (!lines[fence]?.startsWith('```')) throw new Error(`line ${index + 1}: a ${marker[1]} marker must be followed by a fenced block`);
    const close = lines.findIndex((candidate, at) => at > fence && candidate.startsWith('```'));
    if (close === -1) throw new Error(`line ${fence + 1}: the block is not closed`);
    const body = lines.slice(fence + 1, close);
    if (marker[1] === 'no-run') {
      if (!/^:\s*\S/.test(marker[2]!.trim())) throw new Error(`line ${index + 1}: a no-run marker says why: <!-- no-run: the reason -->`);
      return;
    }
    if (marker[1] === 'script') {
      if (marker[2]!.trim() !== '') throw new Error(`line ${index + 1}: a script marker takes no option`);
      blocks.push({ kind: 'script', start: fence + 1, end: close, script: body.join('\n') });
      return;
    }
    if (marker[1] === 'sample') {
      const commands = body.filter((text) => text.startsWith('$ ')).map((text) => text.slice(2));
      if (commands.length === 0) throw new Error(`line ${fence + 1}: a sample block needs a "$ command" line`);
      blocks.push({ kind: 'sample', start: fence + 1, end: close, commands, options: sampleOptions(marker[2]!, index + 1) });
    } else {
      const commands = body
        .map((text) => text.trim())
        .filter((text) => text !== '' && !text.startsWith('#'))
        .map((text) => {
          const exit = /\s#\s*exit (\d+)\s*$/.exec(text);
          return { command: exit === null ? text : text.slice(0, exit.index).trimEnd(), exit: exit === null ? 0 : Number(exit[1]) };
        });
      blocks.push({ kind: 'examples', start: fence + 1, end: close, commands });
    }
  });
  return blocks;
}

/**
 * The shell blocks that carry no marker, by the line of their opening fence: every block of shell
 * commands (```` ```sh ````, `bash`, `shell`, `console`, or no language with a `$ command` line) is
 * run (`sample`, `examples`, `script`) or says why not (`<!-- no-run: the reason -->`).
 */
export function unmarkedShellBlocks(lines: readonly string[]): number[] {
  const unmarked: number[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!lines[index]!.startsWith('```')) continue;
    const close = lines.findIndex((candidate, at) => at > index && candidate.startsWith('```'));
    if (close === -1) break;
    const body = lines.slice(index + 1, close);
    const shell = SHELL_FENCE.test(lines[index]!) || (lines[index]!.trim() === '```' && body.some((line) => line.startsWith('$ ')));
    if (shell && !MARKER.test(lines[index - 1] ?? '')) unmarked.push(index + 1);
    index = close;
  }
  return unmarked;
}

function sampleOptions(text: string, line: number): SampleOptions {
  const options: { head?: number; tail?: number; exit: number } = { exit: 0 };
  for (const pair of text
    .trim()
    .split(/\s+/)
    .filter((part) => part !== '')) {
    const match = /^(head|tail|exit)=(\d+)$/.exec(pair);
    if (match === null) throw new Error(`line ${line}: unknown sample option "${pair}" (head=N, tail=N, exit=N)`);
    options[match[1] as 'head' | 'tail' | 'exit'] = Number(match[2]);
  }
  return options;
}

/** A command's output cut as the options say: the first `head` and last `tail` lines, `…` between. */
export function cutOutput(output: string, options: SampleOptions): string[] {
  const lines = output.replace(/\n$/, '').split('\n');
  const { head, tail } = options;
  if (head === undefined && tail === undefined) return lines;
  const keep = (head ?? 0) + (tail ?? 0);
  if (lines.length <= keep + 1) return lines;
  return [...lines.slice(0, head ?? 0), ELISION, ...(tail === undefined || tail === 0 ? [] : lines.slice(-tail))];
}

/** The block's new body: each `$ command` followed by its output. */
export function sampleBody(block: SampleBlock, outputs: readonly string[]): string[] {
  return block.commands.flatMap((command, index) => [`$ ${command}`, ...cutOutput(outputs[index]!, block.options)]);
}

/**
 * The document with each sample's block body replaced by the one made for its commands. Blocks are
 * found afresh in `lines` and matched by their commands, so the document may have been edited while
 * the samples ran. Returns the new lines and the samples whose block is no longer there.
 */
export function applySamples(
  lines: readonly string[],
  samples: readonly { readonly commands: readonly string[]; readonly body: readonly string[] }[],
): { lines: string[]; missing: string[][] } {
  const result = [...lines];
  const blocks = findBlocks(lines).filter((block): block is SampleBlock => block.kind === 'sample');
  const used = new Set<SampleBlock>();
  const found: { block: SampleBlock; body: readonly string[] }[] = [];
  const missing: string[][] = [];
  for (const sample of samples) {
    const block = blocks.find((candidate) => !used.has(candidate) && sameCommands(candidate.commands, sample.commands));
    if (block === undefined) missing.push([...sample.commands]);
    else {
      used.add(block);
      found.push({ block, body: sample.body });
    }
  }
  // From the last block up, so the earlier blocks' line numbers still hold.
  for (const { block, body } of found.sort((a, b) => b.block.start - a.block.start)) {
    result.splice(block.start, block.end - block.start, ...body);
  }
  return { lines: result, missing };
}

function sameCommands(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((command, index) => command === b[index]);
}

/**
 * The shell command that runs a documented command here: `npm start --`, `npx news-processor` and
 * `node dist/cli/news-processor.js` (what a clone runs where a process must be killed: npm's wrapper
 * would take the signal and leave the command running) become the compiled command (npm's own
 * banner lines are not the tool's output), everything else is kept.
 */
export function localCommand(command: string, bin: string): string {
  return command
    .replace(/\bnpm start (--silent )?--(?= |$)/g, `node ${bin}`)
    .replace(/\bnpx news-processor\b/g, `node ${bin}`)
    .replace(/\bnode dist\/cli\/news-processor\.js\b/g, `node ${bin}`);
}

/**
 * What a command shares with others on its page: the files it names outside `fixtures/` and `dist/`
 * (a results file, a report, a log, a tasks file an earlier command wrote), the queues (`--queue NAME`),
 * ports (`--port=N`) and answer caches (`--cache DIR`) it names.
 */
export function sharedResources(command: string): string[] {
  const files = [
    ...command.matchAll(/(?<![\w/.-])(?!fixtures\/|dist\/)([\w.-]+(?:\/[\w.-]+)*\.(?:jsonl|json|ya?ml|csv|html|svg|png|txt|log))\b/g),
  ].map((match) => `file:${match[1]}`);
  const queues = [...command.matchAll(/--queue[ =]([\w.-]+)/g)].map((match) => `queue:${match[1]}`);
  const ports = [...command.matchAll(/--port[ =](\d+)/g)].map((match) => `port:${match[1]}`);
  const caches = [...command.matchAll(/--cache[ =]([^\s-]\S*)/g)].map((match) => `cache:${match[1]}`);
  return [...new Set([...files, ...queues, ...ports, ...caches])];
}

/**
 * A page's commands, in order, cut into chains that may run at the same time: commands that share a
 * file or a queue (`sharedResources`) are in one chain, in the page's order — a `--resume` after the
 * run that wrote its file, `collect` after `enqueue` — and the others each alone. Returns each
 * chain's indices into `commands`, the chains in the order of their first command.
 */
export function commandChains(commands: readonly string[]): number[][] {
  const parent = commands.map((_, index) => index);
  const root = (index: number): number => {
    while (parent[index] !== index) index = parent[index] = parent[parent[index]!]!;
    return index;
  };
  const owner = new Map<string, number>();
  commands.forEach((command, index) => {
    for (const resource of sharedResources(command)) {
      const earlier = owner.get(resource);
      if (earlier === undefined) owner.set(resource, index);
      else parent[root(index)] = root(earlier);
    }
  });
  const chains = new Map<number, number[]>();
  commands.forEach((_, index) => {
    const chain = chains.get(root(index));
    if (chain === undefined) chains.set(root(index), [index]);
    else chain.push(index);
  });
  return [...chains.values()].sort((a, b) => a[0]! - b[0]!);
}
