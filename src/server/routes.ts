import type { IncomingHttpHeaders } from 'node:http';
import type { ChatApi } from '../vendors/serve/chat-api.ts';
import type { RouteHandler, VendorDialect } from '../vendors/serve/dialect.ts';

/** What the server answers itself, whichever vendor a request speaks: the models, its health, its metrics. */
export type ServerStep = 'models' | 'model' | 'health' | 'metrics';

/** One route: its method and path (`{id}` for the one segment that is an id), the API it speaks, what handles it. */
export interface RouteSpec {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  /** The API whose shapes its answers and errors take; `undefined`: told by the request's headers. */
  readonly api: ChatApi | undefined;
  /** The server's chat steps, one of its own steps, or a dialect's handler. */
  readonly handle: 'chat' | ServerStep | RouteHandler;
  /** Query parameters the route cannot do without (Azure's `api-version`): without them, no route matches. @default none */
  readonly query?: readonly string[] | undefined;
}

/** The routes that are the server's own: the same paths for every vendor that has them, answered in the words the request's headers ask for. */
export const SERVER_ROUTES: readonly RouteSpec[] = Object.freeze([
  { method: 'GET', path: '/v1/models', api: undefined, handle: 'models' },
  { method: 'GET', path: '/v1/models/{id}', api: undefined, handle: 'model' },
  { method: 'GET', path: '/healthz', api: undefined, handle: 'health' },
  { method: 'GET', path: '/metrics', api: undefined, handle: 'metrics' },
] satisfies RouteSpec[]);

/** A request matched to its route: the route (undefined for none), its id segment, the API it speaks, the metrics label. */
export interface MatchedRoute {
  readonly spec: RouteSpec | undefined;
  /** The `{id}` segment, decoded; '' when the route has none. */
  readonly id: string;
  readonly api: ChatApi;
  /** The route as metrics label it: a known path (ids as `{id}`), or `unknown`. */
  readonly label: string;
}

/**
 * Every route the server answers — the dialects' and its own — written once each: the dispatch,
 * the metrics' route label and the API of each come from here. A request outside them speaks the
 * API of the first dialect whose headers it carries (`VendorDialect.claims`), else the first's.
 */
export class RouteTable {
  readonly routes: readonly RouteSpec[];
  readonly #byKey: ReadonlyMap<string, RouteSpec>;
  /** The routes with an `{id}` segment, each as a pattern over the path. */
  readonly #withId: readonly { readonly spec: RouteSpec; readonly pattern: RegExp }[];
  readonly #dialects: readonly VendorDialect[];

  constructor(routes: readonly RouteSpec[], dialects: readonly VendorDialect[]) {
    if (dialects.length === 0) throw new TypeError('Expected at least one dialect, got none');
    this.routes = routes;
    this.#dialects = dialects;
    this.#byKey = new Map(routes.filter((spec) => !spec.path.includes('{')).map((spec) => [`${spec.method} ${spec.path}`, spec]));
    this.#withId = routes
      .filter((spec) => spec.path.includes('{id}'))
      .map((spec) => ({
        spec,
        pattern: new RegExp(`^${spec.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace('{id}', '([^/]+)')}$`),
      }));
  }

  /** Matches `method` and `url`: the exact path, else a path with an `{id}` segment. */
  match(method: string | undefined, url: string | undefined, headers: IncomingHttpHeaders): MatchedRoute {
    const [path = '/', search = ''] = (url ?? '/').split('?', 2);
    let spec = this.#byKey.get(`${method} ${path}`);
    let id = '';
    if (spec === undefined) {
      for (const candidate of this.#withId) {
        if (candidate.spec.method !== method) continue;
        const match = candidate.pattern.exec(path);
        const segment = match === null ? undefined : decodedSegment(match[1]!);
        if (segment !== undefined) {
          spec = candidate.spec;
          id = segment;
          break;
        }
      }
    }
    if (spec?.query !== undefined) {
      const params = new URLSearchParams(search);
      if (spec.query.some((name) => (params.get(name) ?? '') === '')) spec = undefined;
    }
    return { spec, id, api: spec?.api ?? this.apiOf(headers), label: spec?.path ?? 'unknown' };
  }

  /** The API a request outside the dialects' routes speaks, by its headers (the key's header names the vendor). */
  apiOf(headers: IncomingHttpHeaders): ChatApi {
    return (this.#dialects.find((dialect) => dialect.claims?.(headers) === true) ?? this.#dialects[0]!).api;
  }
}

/** A path segment decoded; undefined for a malformed `%` escape (no route has it). */
function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
