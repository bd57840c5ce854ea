import type { VendorDialect } from '../vendors/serve/dialect.ts';
import { VENDORS } from '../vendors/registry.ts';

/** One vendor's dialect, by the vendor's registry name (what `/metrics` labels its batches with). */
export interface LoadedDialect {
  readonly type: string;
  readonly dialect: VendorDialect;
}

/**
 * The dialects of every vendor the registry lists that `serve` speaks, in the registry's order (the
 * first is the default words of a request no dialect claims), loaded together when a server starts.
 */
export async function loadDialects(): Promise<LoadedDialect[]> {
  const served = Object.entries(VENDORS).flatMap(([type, vendor]) => (vendor.serve === undefined ? [] : [{ type, serve: vendor.serve }]));
  return Promise.all(served.map(async ({ type, serve }) => ({ type, dialect: await serve.load() })));
}
