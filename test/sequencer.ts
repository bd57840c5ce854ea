import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest start first, so that no long file starts last and runs alone at the
 * end: the documents' examples run from a clone (about two minutes), then the files that spawn the
 * command or pack the package (test/cli/, test/report/, test/package/: most of the suite's time, in
 * seconds each), then the rest. Within each, vitest's own order: the longest first by the durations
 * of an earlier run when it has them (a fresh clone has none), else the largest file first.
 */
export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted.sort((a, b) => rank(a.moduleId) - rank(b.moduleId));
  }
}

function rank(path: string): number {
  const relative = path.replaceAll('\\', '/');
  if (relative.endsWith('/test/scripts/doc-examples.test.ts')) return 0;
  if (/\/test\/(cli|report|package)\//.test(relative)) return 1;
  return 2;
}
