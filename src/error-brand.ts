/**
 * A type guard for one of the package's error classes that holds across copies of the package.
 *
 * Two copies load side by side more often than one would think — two versions in `node_modules`,
 * a provider published as a package of its own with its own copy, a bundle beside an install —
 * and `instanceof` then answers false for an error the other copy built. The guard checks a brand
 * instead: a registered symbol (`Symbol.for('news-processor.<name>')`, the same in every copy and
 * every realm) set on the class's prototype, which subclasses inherit.
 */
export function brandedGuard<T extends object>(
  errorClass: abstract new (...args: never) => T,
  name: string,
): (value: unknown) => value is T {
  const brand = Symbol.for(`news-processor.${name}`);
  Object.defineProperty(errorClass.prototype, brand, { value: true });
  return (value: unknown): value is T => typeof value === 'object' && value !== null && brand in value;
}
