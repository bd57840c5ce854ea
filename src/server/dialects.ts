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
export async function loadDialects(headers?: string): Promise<LoadedDialect[]> {
  const served = Object.entries(VENDORS).flatMap(([type, vendor]) => (vendor.serve === undefined ? [] : [{ type, serve: vendor.serve }]));
  return Promise.all(
    served.map(async ({ type, serve }) => ({
      type,
      // A host dialect is spoken on the routes of the vendor whose API the host speaks; the others keep their own.
      dialect: await serve.load(headers !== undefined && serve.hostHeaders?.includes(headers) === true ? { headers } : {}),
    })),
  );
}

/** The host dialects `serve --headers` imitates: every served vendor's, in the registry's order. */
export const SERVE_HOST_HEADERS: readonly string[] = Object.freeze([
  ...new Set(Object.values(VENDORS).flatMap((vendor) => vendor.serve?.hostHeaders ?? [])),
]);
