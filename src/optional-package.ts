import { brandedGuard } from './error-brand.ts';

/**
 * The packages a feature loads only when it is used. They are optional peer dependencies: a user
 * who needs the token bucket or the middleware installs none of them, and one who needs a feature
 * is told, in one line, which package to install. The versions are those the package is tested
 * with (a test holds them to `package.json`'s `peerDependencies`). A vendor's SDK is the vendor's
 * to name: its folder under `src/vendors/` gives its {@link PackageSpec}.
 */
export type OptionalPackage =
  | 'ioredis'
  | 'bullmq'
  | 'gpt-tokenizer'
  | 'prom-client'
  | 'vega'
  | 'vega-lite'
  | 'csv-parse'
  | 'yaml'
  | 'lmdb'
  | '@opentelemetry/api'
  | '@opentelemetry/sdk-node';

export const OPTIONAL_PACKAGES: Readonly<Record<OptionalPackage, string>> = Object.freeze({
  ioredis: '6.0.0',
  bullmq: '6.7.0',
  'gpt-tokenizer': '4.0.0',
  'prom-client': '15.1.3',
  vega: '6.4.0',
  'vega-lite': '6.4.3',
  'csv-parse': '7.0.3',
  yaml: '2.9.1',
  lmdb: '3.5.6',
  '@opentelemetry/api': '1.9.0',
  '@opentelemetry/sdk-node': '0.223.0',
});

/** An optional package by name, and the version the package is tested with: a vendor's SDK, as its folder names it. */
export interface PackageSpec {
  /** The name to install (`npm install NAME@VERSION`). */
  readonly name: string;
  /** The version the package is tested with (`package.json`'s devDependency, `^` it in peerDependencies). */
  readonly version: string;
}

/** A feature was used whose package is not installed. Its message names the package and the command that installs it. */
export class MissingPackageError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'MissingPackageError';

  /** The package to install. */
  readonly packageName: string;

  constructor(
    /** The package to install: one of the package's own, or a vendor's SDK with its version. */
    pkg: OptionalPackage | PackageSpec,
    /** What needs it, as the message says it: `the vendor's provider`. */
    readonly feature: string,
    cause?: unknown,
  ) {
    const { name, version } = typeof pkg === 'string' ? { name: pkg, version: OPTIONAL_PACKAGES[pkg] } : pkg;
    super(`${feature} needs the ${name} package: npm install ${name}@${version}`, { cause });
    this.packageName = name;
  }
}

// By brand: a provider built on another copy of the package that lacks its SDK still stops the run.
export const isMissingPackageError = brandedGuard(MissingPackageError, 'MissingPackageError');

/**
 * Imports an optional package, or rejects with {@link MissingPackageError} when it is not installed.
 * Any other failure (a package that is there but broken) is passed on as it is. `load` is the
 * caller's own `() => import('name')`, so that bundlers and type checkers see a literal specifier.
 */
export async function loadOptional<T>(pkg: OptionalPackage | PackageSpec, feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isNotFound(error, typeof pkg === 'string' ? pkg : pkg.name)) throw new MissingPackageError(pkg, feature, error);
    throw error;
  }
}

/** Whether `error` says that `packageName` itself (not something it imports) cannot be found. */
function isNotFound(error: unknown, packageName: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && (message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`));
}
