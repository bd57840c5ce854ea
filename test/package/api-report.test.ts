import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { apiReport, ENTRY_POINTS } from '../../scripts/api-report.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every name each entry point's declarations export: what a type an entry point leaves out may come from instead. */
async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const entry of ENTRY_POINTS) {
    const declarations = await readFile(join(ROOT, entry.declarations), 'utf8');
    for (const [, list] of declarations.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
      for (const item of list!.split(','))
        names.add(
          item
            .trim()
            .replace(/^type /, '')
            .split(' as ')
            .at(-1)!
            .trim(),
        );
    }
  }
  return names;
}

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
});
