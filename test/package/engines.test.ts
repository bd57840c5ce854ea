import { readFile } from 'node:fs/promises';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

interface LockedPackage {
  readonly version?: string;
  readonly engines?: { readonly node?: string } | readonly string[];
}

describe('package-lock.json', () => {
  // `npm ci` warns EBADENGINE for every locked package whose engines exclude the running Node, even a
  // development dependency's dependency: the lock holds only packages that run on the Node it is
  // installed with (an `overrides` entry in package.json pins an older line where a dependency's
  // newest needs a newer Node).
  it('locks only packages whose engines allow the running Node', async () => {
    const lock = JSON.parse(await readFile(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
      packages: Record<string, LockedPackage>;
    };
    const refused: string[] = [];
    for (const [path, locked] of Object.entries(lock.packages)) {
      const range = Array.isArray(locked.engines) ? undefined : (locked.engines as { node?: string } | undefined)?.node;
      if (path === '' || range === undefined) continue;
      if (!semver.satisfies(process.version, range, { includePrerelease: true })) refused.push(`${path}@${locked.version}: node ${range}`);
    }
    expect(refused).toEqual([]);
  });
});
