import type { IncomingHttpHeaders } from 'node:http';
import { anthropicApi } from './anthropic-api.ts';
import { azureApi } from './azure-api.ts';
import type { ChatApi } from './chat-api.ts';
import { openAiApi } from './openai-api.ts';
import { responsesApi } from './responses-api.ts';

/** What the server does with a request: the steps `LlmServer` runs for each kind. */
export type RouteHandler =
  | 'chat'
  | 'count-tokens'
  | 'retrieve-response'
  | 'models'
  | 'model'
  | 'health'
  | 'metrics'
  | 'upload-file'
  | 'file'
  | 'file-content'
  | 'delete-file'
  | 'create-batch'
  | 'batch'
  | 'list-batches'
  | 'cancel-batch'
  | 'create-message-batch'
  | 'message-batch'
  | 'list-message-batches'
  | 'message-batch-results'
  | 'cancel-message-batch'
  | 'delete-message-batch';

/** One route: its method and path (`{id}` for the one segment that is an id), the API it speaks, what handles it. */
export interface RouteSpec {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  /** The API whose shapes its answers and errors take; `undefined`: told by the request's headers. */
  readonly api: ChatApi | undefined;
  readonly handler: RouteHandler;
  /** Query parameters the route cannot do without (Azure's `api-version`): without them, no route matches. @default none */
  readonly query?: readonly string[];
}

/** Every route the server answers, written once: the dispatch, the metrics' route label and the API of each come from here. */
export const ROUTES: readonly RouteSpec[] = Object.freeze([
  { method: 'POST', path: '/v1/chat/completions', api: openAiApi, handler: 'chat' },
  { method: 'POST', path: '/v1/messages', api: anthropicApi, handler: 'chat' },
  { method: 'POST', path: '/v1/responses', api: responsesApi, handler: 'chat' },
  // Azure OpenAI's form: the deployment in the path, `?api-version=` required.
  { method: 'POST', path: '/openai/deployments/{id}/chat/completions', api: azureApi, handler: 'chat', query: ['api-version'] },
  { method: 'POST', path: '/v1/messages/count_tokens', api: anthropicApi, handler: 'count-tokens' },
  { method: 'GET', path: '/v1/responses/{id}', api: responsesApi, handler: 'retrieve-response' },
  { method: 'GET', path: '/v1/models', api: undefined, handler: 'models' },
  { method: 'GET', path: '/v1/models/{id}', api: undefined, handler: 'model' },
  { method: 'POST', path: '/v1/files', api: openAiApi, handler: 'upload-file' },
  { method: 'GET', path: '/v1/files/{id}', api: openAiApi, handler: 'file' },
  { method: 'GET', path: '/v1/files/{id}/content', api: openAiApi, handler: 'file-content' },
  { method: 'DELETE', path: '/v1/files/{id}', api: openAiApi, handler: 'delete-file' },
  { method: 'POST', path: '/v1/batches', api: openAiApi, handler: 'create-batch' },
  { method: 'GET', path: '/v1/batches', api: openAiApi, handler: 'list-batches' },
  { method: 'GET', path: '/v1/batches/{id}', api: openAiApi, handler: 'batch' },
  { method: 'POST', path: '/v1/batches/{id}/cancel', api: openAiApi, handler: 'cancel-batch' },
  { method: 'POST', path: '/v1/messages/batches', api: anthropicApi, handler: 'create-message-batch' },
  { method: 'GET', path: '/v1/messages/batches', api: anthropicApi, handler: 'list-message-batches' },
  { method: 'GET', path: '/v1/messages/batches/{id}', api: anthropicApi, handler: 'message-batch' },
  { method: 'GET', path: '/v1/messages/batches/{id}/results', api: anthropicApi, handler: 'message-batch-results' },
  { method: 'POST', path: '/v1/messages/batches/{id}/cancel', api: anthropicApi, handler: 'cancel-message-batch' },
  { method: 'DELETE', path: '/v1/messages/batches/{id}', api: anthropicApi, handler: 'delete-message-batch' },
  { method: 'GET', path: '/healthz', api: undefined, handler: 'health' },
  { method: 'GET', path: '/metrics', api: undefined, handler: 'metrics' },
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

const BY_KEY = new Map(ROUTES.filter((spec) => !spec.path.includes('{')).map((spec) => [`${spec.method} ${spec.path}`, spec]));
/** The routes with an `{id}` segment, each as a pattern over the path. */
const WITH_ID = ROUTES.filter((spec) => spec.path.includes('{id}')).map((spec) => ({
  spec,
  pattern: new RegExp(`^${spec.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace('{id}', '([^/]+)')}$`),
}));

/** Matches `method` and `url` against {@link ROUTES}: the exact path, else a path with an `{id}` segment. */
export function matchRoute(method: string | undefined, url: string | undefined, headers: IncomingHttpHeaders): MatchedRoute {
  const [path = '/', search = ''] = (url ?? '/').split('?', 2);
  let spec = BY_KEY.get(`${method} ${path}`);
  let id = '';
  if (spec === undefined) {
    for (const candidate of WITH_ID) {
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
  return { spec, id, api: spec?.api ?? apiOf(headers), label: spec?.path ?? 'unknown' };
}

/** The API a request outside the chat routes speaks, by its headers: Anthropic's name their key and version. */
function apiOf(headers: IncomingHttpHeaders): ChatApi {
  if (headers['api-key'] !== undefined) return azureApi;
  return headers['x-api-key'] !== undefined || headers['anthropic-version'] !== undefined ? anthropicApi : openAiApi;
}

/** A path segment decoded; undefined for a malformed `%` escape (no route has it). */
function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
