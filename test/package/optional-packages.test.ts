import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { isMissingPackageError, loadOptional, MissingPackageError, OPTIONAL_PACKAGES } from '../../src/optional-package.ts';
import { VENDORS } from '../../src/vendors/registry.ts';

/** Every optional package with the version the package is tested with: the package's own, and each vendor's SDK, as its folder names it. */
const ALL_OPTIONAL: Readonly<Record<string, string>> = {
  ...OPTIONAL_PACKAGES,
  ...Object.fromEntries(Object.values(VENDORS).map(({ sdkPackage }) => [sdkPackage.name, sdkPackage.version])),
};

describe('the optional packages', () => {
  it('are the peer dependencies, each at the version the tests install, within its peer range', async () => {
    const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional: boolean }>;
      devDependencies: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(Object.keys(ALL_OPTIONAL).sort());
    for (const [name, version] of Object.entries(ALL_OPTIONAL)) {
      expect(manifest.devDependencies[name], name).toBe(version);
      expect(manifest.peerDependencies[name], name).toBe(`^${version}`);
      expect(manifest.peerDependenciesMeta[name], name).toEqual({ optional: true });
      expect(manifest.dependencies, name).not.toHaveProperty(name);
    }
  });
});

describe('loadOptional()', () => {
  it('resolves with the module when the package is there', async () => {
    const module = await loadOptional('prom-client', 'metrics', () => import('prom-client'));
    expect(typeof module.Registry).toBe('function');
  });

  it('rejects with a MissingPackageError naming the package and the command when it is not', async () => {
    const notFound = Object.assign(new Error("Cannot find package 'vega' imported from /app/x.js"), { code: 'ERR_MODULE_NOT_FOUND' });
    const error = await loadOptional('vega', 'a bench chart', () => Promise.reject(notFound)).catch((e: unknown) => e);
    expect(isMissingPackageError(error)).toBe(true);
    expect(error).toBeInstanceOf(MissingPackageError);
    expect((error as Error).message).toBe('a bench chart needs the vega package: npm install vega@6.4.0');
    expect((error as MissingPackageError).cause).toBe(notFound);
  });

  it("names a vendor's SDK and its version as the vendor's folder gives them", async () => {
    const notFound = Object.assign(new Error("Cannot find package 'some-sdk' imported from /app/x.js"), { code: 'ERR_MODULE_NOT_FOUND' });
    const error = await loadOptional({ name: 'some-sdk', version: '2.1.0' }, 'the vendor', () => Promise.reject(notFound)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MissingPackageError);
    expect((error as MissingPackageError).packageName).toBe('some-sdk');
    expect((error as Error).message).toBe('the vendor needs the some-sdk package: npm install some-sdk@2.1.0');
  });

  it('passes on any other failure as it is: a package that is there but cannot load, or one of its own imports missing', async () => {
    const broken = new SyntaxError('Unexpected token');
    await expect(loadOptional('vega', 'a chart', () => Promise.reject(broken))).rejects.toBe(broken);
    const inner = Object.assign(new Error("Cannot find package 'd3-array' imported from vega"), { code: 'ERR_MODULE_NOT_FOUND' });
    await expect(loadOptional('vega', 'a chart', () => Promise.reject(inner))).rejects.toBe(inner);
  });
});
