import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { apiReport, ENTRY_POINTS } from '../../scripts/api-report.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The names one entry point's declarations export, types included. */
async function namesOf(entry: (typeof ENTRY_POINTS)[number]): Promise<Set<string>> {
  const names = new Set<string>();
  const declarations = await readFile(join(ROOT, entry.declarations), 'utf8');
  for (const [, list] of declarations.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
    for (const item of list!.split(',')) {
      const name = item
        .trim()
        .replace(/^type /, '')
        .split(' as ')
        .at(-1)!
        .trim();
      if (name !== '') names.add(name);
    }
  }
  return names;
}

/** Every name each entry point's declarations export: what a type an entry point leaves out may come from instead. */
async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const entry of ENTRY_POINTS) for (const name of await namesOf(entry)) names.add(name);
  return names;
}

/** The most names the main entry may export, types included: what a pipeline user needs (CONTRIBUTING.md, "Entries"). */
const ROOT_MOST_NAMES = 120;

/** One API Extractor run per entry point (each takes seconds), shared by the checks below. */
const outcomes = new Map<string, ReturnType<typeof apiReport>>();
const outcomeOf = (entry: (typeof ENTRY_POINTS)[number]) => {
  let outcome = outcomes.get(entry.name);
  if (outcome === undefined) {
    outcome = apiReport(entry, false);
    outcomes.set(entry.name, outcome);
  }
  return outcome;
};

describe('the public API, entry point by entry point', () => {
  it.each(ENTRY_POINTS)(
    '$name is as its committed API report in docs/api says',
    async (entry) => {
      const outcome = outcomeOf(entry);
      expect(outcome.problems).toEqual([]);
      const report = `docs/api/${entry.name}.api.md`;
      expect(
        outcome.changed,
        `the public API of ${entry.name} changed: see ${outcome.tempPath}, then run npm run api and commit ${report}`,
      ).toBe(false);
    },
    60_000,
  );

  it.each(ENTRY_POINTS)(
    "$name takes no type a user could not import: each is its own or another entry point's",
    async (entry) => {
      const elsewhere = await exportedNames();
      expect(outcomeOf(entry).forgotten.filter((name) => !elsewhere.has(name))).toEqual([]);
    },
    60_000,
  );

  it(`the main entry exports at most ${ROOT_MOST_NAMES} names, types included, as its API report lists them`, async () => {
    const root = ENTRY_POINTS.find((entry) => entry.name === 'news-processor')!;
    const names = [...(await namesOf(root))].sort();
    const report = await readFile(join(ROOT, 'docs', 'api', `${root.name}.api.md`), 'utf8');
    const reported = new Set(
      [...report.matchAll(/^export (?:declare )?(?:abstract )?(?:class|interface|type|const|function|enum|namespace) (\w+)/gm)].map(
        (match) => match[1]!,
      ),
    );
    expect(names).toEqual([...reported].sort());
    expect(
      names.length,
      `the main entry exports ${names.length} names: a name goes there only if a pipeline user needs it, else to the entry point of its folder`,
    ).toBeLessThanOrEqual(ROOT_MOST_NAMES);
  });
});
