import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { CircuitBreaker } from '../breaker/circuit-breaker.ts';
import type { AnswerCache } from '../cache/answer-cache.ts';
import { answerKey } from '../cache/answer-key.ts';
import { systemClock, type Clock } from '../clock.ts';
import type { ProviderConfig } from '../config/providers-config.ts';
import { GATE_DEFAULTS } from '../gate/call-gate.ts';
import { usageNanoUsd } from '../gate/call-cost.ts';
import type { ProviderPrice } from '../gate/provider-options.ts';
import type { TokenUsage } from '../provider/provider.ts';
import { isLimitTooSmallError, type ProviderLimits } from '../quota/provider-limits.ts';
import { LocalLimits } from '../quota/local-limits.ts';
import { NANO_USD } from '../quota/budget.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkNumber, checkObject } from '../validation/checks.ts';
import { isInvalidRequestError, type Failure } from '../vendors/serve/chat-api.ts';
import type { ProxyClientApi } from '../vendors/proxy-wire.ts';
import { VENDORS } from '../vendors/registry.ts';
import { FairQueue } from './fair-queue.ts';
import { forward, routesOf, type GatewayRoute } from './forward.ts';
import type { GatewayConfig } from './gateway-config.ts';
import { GatewayKeys, localKeyStores, takeKeyLimits, type KeyState, type KeyStores, type LimitVerdict } from './gateway-keys.ts';
import { ProxyMetrics } from './proxy-metrics.ts';
import { answerClient, type Settle } from './answer-client.ts';
import { PROXY_DEFAULTS } from './proxy-defaults.ts';
import { readAll, type UpstreamMember } from './upstream-member.ts';
import { listeningUrl } from '../server/listening-url.ts';

/** One request as `--log` writes it: no prompt, no key. */
export interface ProxyLogLine {
  readonly time: string;
  readonly key: string;
  readonly model: string | undefined;
  readonly member: string | undefined;
  readonly status: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd: number;
  /** Held for attempts perhaps billed (sent, then a reset, a timeout, an answer cut off): against the budget, apart from `costUsd`. */
  readonly unknownCostUsd?: number;
  readonly ms: number;
  /** Answered from `--cache`: no upstream call, nothing spent. */
  readonly cached: boolean;
}

export interface ProxyServerOptions {
  readonly config: GatewayConfig;
  /** Each provider's upstream key, by provider name (read by the command from its `apiKeyEnv`): sent only upstream. */
  readonly apiKeys: Readonly<Record<string, string>>;
  /** Where each member's limits live. @default in this process (`LocalLimits`) */
  readonly memberLimits?: ((provider: ProviderConfig) => ProviderLimits) | undefined;
  /** Where each key's budget and buckets live. @default in this process */
  readonly keyStores?: KeyStores | undefined;
  /** @default PROXY_DEFAULTS.maxWaitMs */
  readonly maxWaitMs?: number | undefined;
  /** @default PROXY_DEFAULTS.maxBodyBytes */
  readonly maxBodyBytes?: number | undefined;
  /**
   * The answer cache (`--cache`): a whole (not streamed) request identical to one answered before
   * is answered from it, no upstream call, nothing taken from the key. @default none
   */
  readonly cache?: AnswerCache | undefined;
  /** Told each request as it ends (`--log`). @default none */
  readonly onRequest?: ((line: ProxyLogLine) => void) | undefined;
  /** @default silentLogger */
  readonly logger?: Logger | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
}

/** What every request of one client API on one route goes by. */
interface RoutePlan {
  /** The route, then its fallbacks, each with its members of the client's API. */
  readonly routes: readonly { readonly route: GatewayRoute; readonly members: readonly UpstreamMember[] }[];
  /** The route's own members of the client's API. */
  readonly members: readonly UpstreamMember[];
  /** The dearest price over every member reachable (undefined: one has none). */
  readonly price: ProviderPrice | undefined;
  /** The output cap of a request that names none. */
  readonly maxOutputCap: number;
  readonly perRequestTokens: number;
}

/** A request's hold on its key's budget: its worst case, and how it is settled. */
interface Held {
  readonly worstNano: number;
  settle(nano: number, unknownNano: number): void;
}

const NO_TOKENS: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/** The verdict of a key without limits. */
const NO_LIMITS: LimitVerdict = Object.freeze({ allowed: true as const, headers: {} as Record<string, string> });

/** The gateway's worst-case price over members: the dearest input (or cache write) and output per million tokens. */
function dearest(members: readonly UpstreamMember[]): ProviderPrice | undefined {
  if (members.some((member) => member.price === undefined)) return undefined;
  return {
    inputPerMTok: Math.max(...members.map(({ price }) => Math.max(price!.inputPerMTok, price!.cacheWritePerMTok ?? 0))),
    outputPerMTok: Math.max(...members.map(({ price }) => price!.outputPerMTok)),
  };
}

/**
 * `news-processor proxy`: one gateway in front of the vendors for every client a team runs. Clients
 * call it with the gateway's own keys in their vendor's API (the official SDKs unchanged); each key
 * has an exact budget (its worst case held before any upstream call, settled on the usage), exact
 * limits (the middleware's buckets) and a weighted share of the upstream's quota (a fair queue in
 * front of each route's limits). With Redis-backed stores, the budgets, the limits and the
 * upstream quota are one figure across replicas — and shared with runs and queue workers.
 */
export class ProxyServer {
  readonly #server: Server;
  readonly #clients: ReadonlyMap<string, ProxyClientApi>;
  readonly #routes: ReadonlyMap<string, GatewayRoute>;
  readonly #models: Readonly<Record<string, string>>;
  readonly #keys: GatewayKeys;
  readonly #metrics: ProxyMetrics;
  readonly #maxWaitMs: number;
  readonly #maxBodyBytes: number;
  readonly #onRequest: ProxyServerOptions['onRequest'];
  readonly #cache: AnswerCache | undefined;
  readonly #plans = new Map<string, RoutePlan>();
  readonly #logger: Logger;
  readonly #clock: Clock;
  #inFlight = 0;
  #closing: Promise<void> | undefined;

  private constructor(options: ProxyServerOptions, clients: Map<string, ProxyClientApi>, members: UpstreamMember[], metrics: ProxyMetrics) {
    const { config } = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#maxWaitMs = options.maxWaitMs ?? PROXY_DEFAULTS.maxWaitMs;
    this.#maxBodyBytes = options.maxBodyBytes ?? PROXY_DEFAULTS.maxBodyBytes;
    this.#onRequest = options.onRequest;
    this.#cache = options.cache;
    this.#clients = clients;
    this.#metrics = metrics;
    this.#models = config.models;
    const byName = new Map(members.map((member) => [member.name, member]));
    const routes = new Map<string, GatewayRoute & { fallback: GatewayRoute[] }>();
    for (const member of members) {
      routes.set(member.name, {
        name: member.name,
        members: [member],
        queue: new FairQueue(),
        strategy: 'soonest',
        weights: [1],
        fallback: [],
      });
    }
    for (const pool of config.pools) {
      const poolMembers = pool.members.map((name) => byName.get(name)!);
      routes.set(pool.name, {
        name: pool.name,
        members: poolMembers,
        queue: new FairQueue(),
        strategy: pool.strategy ?? 'soonest',
        // As a run's pool weighs them: the pool's weights, else each member's request rate (1 without one).
        weights: pool.weights ?? poolMembers.map(({ limits }) => (limits.rate === Number.POSITIVE_INFINITY ? 1 : limits.rate)),
        fallback: [],
      });
    }
    for (const pool of config.pools) routes.get(pool.name)!.fallback.push(...(pool.fallback ?? []).map((name) => routes.get(name)!));
    this.#routes = routes;
    this.#keys = new GatewayKeys(config.keys, options.keyStores ?? localKeyStores(options.clock));
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.keepAliveTimeout = 65_000;
  }

  /** Loads each vendor's proxy wire and prom-client, and makes the gateway (not yet listening). */
  static async create(options: ProxyServerOptions): Promise<ProxyServer> {
    checkObject('options', options);
    if (options.maxWaitMs !== undefined) checkNumber('maxWaitMs', options.maxWaitMs, { min: 0, unit: 'ms' });
    if (options.maxBodyBytes !== undefined) checkNumber('maxBodyBytes', options.maxBodyBytes, { min: 1, unit: 'bytes' });
    const clock = options.clock ?? systemClock;
    const clients = new Map<string, ProxyClientApi>();
    const members: UpstreamMember[] = [];
    for (const provider of options.config.providers) {
      const vendor = VENDORS[provider.type as keyof typeof VENDORS];
      if (vendor?.proxy === undefined || provider.api === undefined) {
        throw new TypeError(`Expected providers[].type to be a vendor the proxy forwards to, got ${provider.type} (${provider.name})`);
      }
      const wire = await vendor.proxy.load();
      clients.set(wire.client.path, wire.client);
      const apiKey = options.apiKeys[provider.name];
      if (apiKey === undefined) throw new TypeError(`Expected an API key for provider ${provider.name}, got none`);
      members.push({
        name: provider.name,
        client: vendor.proxy.client,
        wire: wire.upstream,
        target: { baseUrl: provider.api.baseUrl, model: provider.api.model, apiKey, apiVersion: provider.api.apiVersion },
        limits: options.memberLimits?.(provider) ?? new LocalLimits({ limits: provider.limits, clock }),
        breaker: provider.breaker === undefined ? undefined : new CircuitBreaker({ ...provider.breaker, name: provider.name, clock }),
        price: provider.price,
        maxOutputTokens: provider.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens,
        callTimeoutMs: provider.callTimeoutMs ?? PROXY_DEFAULTS.callTimeoutMs,
        perRequestTokens: vendor.defaults.framing.perRequestTokens,
      });
    }
    const metrics = await ProxyMetrics.create(() =>
      members.map((member) => ({ member: member.name, state: member.breaker?.state.kind ?? 'closed' })),
    );
    return new ProxyServer(options, clients, members, metrics);
  }

  /** Listens; resolves with `http://HOST:PORT` once it accepts connections. */
  listen(options: { host?: string; port?: number } = {}): Promise<string> {
    const { host = PROXY_DEFAULTS.host, port = PROXY_DEFAULTS.port } = options;
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve(this.url!);
      });
    });
  }

  /** `http://HOST:PORT` while listening. */
  get url(): string | undefined {
    return listeningUrl(this.#server);
  }

  /** Requests being answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Stops taking connections; resolves once the requests in flight are answered (streams to their end). */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve, reject) => {
      if (!this.#server.listening) return resolve();
      this.#server.close((error) => (error === undefined ? resolve() : reject(error)));
      this.#server.closeIdleConnections();
    });
    return this.#closing;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && path === '/metrics') {
      res.writeHead(200, { 'content-type': this.#metrics.contentType });
      res.end(await this.#metrics.text());
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('ok\n');
      return;
    }
    const client = this.#clients.get(path) ?? [...this.#clients.values()][0]!;
    const requestId = randomUUID();
    const startMs = this.#clock.now();
    this.#inFlight++;
    // The connection closes after the answer while the server stops.
    if (this.#closing !== undefined) res.shouldKeepAlive = false;
    const log = {
      key: '',
      model: undefined as string | undefined,
      member: undefined as string | undefined,
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: 0,
      unknownCostUsd: 0,
      cached: false,
    };
    const fail = (failure: Failure, reason: string, headers: Record<string, string> = {}): void => {
      if (reason !== '') this.#metrics.refusal(log.key, reason);
      const { status, body } = client.fail(failure, requestId);
      if (!res.headersSent) {
        res.writeHead(status, { 'content-type': 'application/json', [client.requestIdHeader]: requestId, ...headers });
        res.end(JSON.stringify(body));
      }
    };
    try {
      if (req.method !== 'POST' || !this.#clients.has(path)) {
        const routes = [...this.#clients.values()].map((api) => `POST ${api.path}`).join(', ');
        fail({ kind: 'not-found', message: `Unknown route ${req.method} ${path}: the proxy answers ${routes}.` }, '');
        return;
      }
      await this.#serve(req, res, client, requestId, log, fail);
    } catch (error) {
      if (!res.headersSent) {
        this.#logger.error({ err: error }, 'proxy request failed');
        fail({ kind: 'server-error', message: 'The proxy failed to answer the request.' }, '');
      } else if (!res.writableEnded) res.destroy();
    } finally {
      this.#inFlight--;
      const status = res.headersSent ? res.statusCode : 499;
      this.#metrics.request(log.key, status);
      this.#onRequest?.({
        time: new Date().toISOString(),
        key: log.key,
        model: log.model,
        member: log.member,
        status,
        inputTokens: log.usage.inputTokens,
        outputTokens: log.usage.outputTokens,
        costUsd: log.costUsd,
        ...(log.unknownCostUsd > 0 && { unknownCostUsd: log.unknownCostUsd }),
        ms: Math.round((this.#clock.now() - startMs) * 1000) / 1000,
        cached: log.cached,
      });
    }
  }

  async #serve(
    req: IncomingMessage,
    res: ServerResponse,
    client: ProxyClientApi,
    requestId: string,
    log: {
      key: string;
      model: string | undefined;
      member: string | undefined;
      usage: { inputTokens: number; outputTokens: number };
      costUsd: number;
      unknownCostUsd: number;
      cached: boolean;
    },
    fail: (failure: Failure, reason: string, headers?: Record<string, string>) => void,
  ): Promise<void> {
    const sent = client.keyOf(req.headers);
    const key = sent === undefined ? undefined : this.#keys.find(sent);
    if (key === undefined) {
      req.resume();
      fail(
        {
          kind: 'authentication',
          message: sent === undefined ? 'No API key: send it as Authorization: Bearer KEY or x-api-key: KEY.' : 'Invalid API key.',
        },
        'key',
      );
      return;
    }
    log.key = key.name;
    const raw = await this.#readBody(req);
    if (raw === undefined) {
      fail(
        { kind: 'too-large', message: `The request body is larger than ${this.#maxBodyBytes} bytes.`, code: 'request_too_large' },
        'body',
        { connection: 'close' },
      );
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      fail({ kind: 'invalid-request', message: 'The request body is not valid JSON.' }, 'body');
      return;
    }
    let facts: ReturnType<ProxyClientApi['read']>;
    try {
      facts = client.read(body);
    } catch (error) {
      if (!isInvalidRequestError(error)) throw error;
      fail({ kind: 'invalid-request', message: error.message, param: error.param, code: error.code }, 'body');
      return;
    }
    log.model = facts.model;
    const routeName = Object.hasOwn(this.#models, facts.model) ? this.#models[facts.model] : undefined;
    const route = routeName === undefined ? undefined : this.#routes.get(routeName);
    if (route === undefined) {
      fail(
        {
          kind: 'not-found',
          message: `The model '${facts.model}' does not exist or you do not have access to it.`,
          param: 'model',
          code: 'model_not_found',
        },
        'model',
      );
      return;
    }
    if (key.models !== undefined && !key.models.has(facts.model)) {
      fail(
        {
          kind: 'permission',
          message: `The key '${key.name}' may not use the model '${facts.model}'.`,
          param: 'model',
          code: 'model_not_allowed',
        },
        'model',
      );
      return;
    }
    const { routes, members, price, maxOutputCap, perRequestTokens } = this.#planOf(route, client.name);
    if (members.length === 0) {
      const apis = [...new Set(route.members.map((member) => member.client))];
      const paths = [...this.#clients.values()].filter((api) => apis.includes(api.name)).map((api) => `POST ${api.path}`);
      fail(
        {
          kind: 'invalid-request',
          message: `The model '${facts.model}' is served in another API than this route's (${client.name}): call ${paths.join(' or ')}.`,
          param: 'model',
        },
        'model',
      );
      return;
    }
    // A whole answer kept before: given again, no upstream call, nothing taken from the key's limits or budget.
    const cacheKey = this.#cache === undefined || facts.stream ? undefined : cacheKeyOf(client.name, routes, body);
    if (cacheKey !== undefined) {
      const hit = await this.#cache!.get(cacheKey).catch((error: unknown) => {
        this.#logger.warn({ err: error }, 'proxy cache read failed: taken as a miss');
        return undefined;
      });
      const { contentType, text } = hit?.output ?? {};
      if (typeof contentType === 'string' && typeof text === 'string') {
        log.cached = true;
        res.writeHead(200, { 'content-type': contentType, [client.requestIdHeader]: requestId });
        res.end(text);
        return;
      }
    }
    const maxOutputTokens = facts.maxOutputTokens ?? maxOutputCap;
    // At most one token a byte of the body, and what the vendor adds to each request.
    const inputTokens = raw.length + perRequestTokens;
    const limited = key.limits.length === 0 ? NO_LIMITS : await takeKeyLimits(key, { input: inputTokens, output: maxOutputTokens });
    if (!limited.allowed) {
      fail(
        {
          kind: 'rate-limited',
          message: `The key '${key.name}' is over its ${limited.kind} limit: try again in ${Math.ceil(limited.retryAfterMs / 1000)} s.`,
          limit: limited.kind === 'requests' ? 'requests' : 'tokens',
        },
        'limit',
        limited.headers,
      );
      return;
    }
    const held = this.#hold(key, price, inputTokens, maxOutputTokens);
    const settle = held instanceof Promise ? await held : held;
    if (settle === undefined) {
      limited.settle?.(NO_TOKENS);
      fail(
        {
          kind: 'insufficient-funds',
          message: `The key '${key.name}' has spent its budget: this request could cost more than is left of it.`,
        },
        'budget',
        { ...limited.headers, 'x-should-retry': 'false' },
      );
      return;
    }
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableEnded) abort.abort(new Error('the client closed the connection'));
    };
    res.once('close', onClose);
    let spentNano = 0;
    const fates = { unknown: 0 };
    // What the key's token limits settle on: nothing used unless an upstream answers; its usage, or (unreported) the worst case.
    let keyUsage: TokenUsage | undefined = NO_TOKENS;
    const settleAt: Settle = (member, usage) => {
      keyUsage = usage;
      spentNano =
        usage === undefined
          ? settle.worstNano
          : member.price === undefined
            ? 0
            : Math.min(settle.worstNano, usageNanoUsd(usage, member.price));
      if (usage !== undefined) log.usage = usage;
      log.costUsd = spentNano / NANO_USD;
      this.#metrics.spent(key.name, log.costUsd, usage?.inputTokens ?? 0, usage?.outputTokens ?? 0);
    };
    try {
      const forwarded = await forward(
        {
          key,
          routes,
          body: body as Record<string, unknown>,
          clientHeaders: req.headers,
          facts,
          maxOutputTokens,
          inputTokens,
          signal: abort.signal,
          deadlineMs: this.#clock.now() + this.#maxWaitMs,
          fates,
        },
        this.#clock,
        (member, outcome) => this.#metrics.call(member.name, outcome),
      );
      if (forwarded.kind === 'busy' || forwarded.kind === 'unavailable') {
        const busy = forwarded.kind === 'busy';
        // A quota that never grants it (a rate of 0) says a minute, not Infinity.
        const seconds = busy ? (Number.isFinite(forwarded.retryAfterMs) ? Math.max(1, Math.ceil(forwarded.retryAfterMs / 1000)) : 60) : 1;
        fail(
          busy
            ? {
                kind: 'rate-limited',
                message: `The upstream's quota cannot take the request within ${this.#maxWaitMs} ms: try again in ${seconds} s.`,
              }
            : { kind: 'overloaded', message: `No upstream of '${route.name}' can take the request now.` },
          'wait',
          { 'retry-after': String(seconds) },
        );
        return;
      }
      log.member = forwarded.member.name;
      if (forwarded.kind === 'answer') keyUsage = undefined;
      if (forwarded.kind === 'upstream') {
        res.writeHead(forwarded.status, { 'content-type': forwarded.contentType, [client.requestIdHeader]: requestId, ...limited.headers });
        res.end(forwarded.body);
        return;
      }
      await answerClient(
        res,
        forwarded,
        body as Record<string, unknown>,
        facts.stream,
        { [client.requestIdHeader]: requestId, ...limited.headers },
        settleAt,
        cacheKey === undefined ? undefined : (whole) => this.#keep(cacheKey, whole),
      );
    } catch (error) {
      if (abort.signal.aborted) return;
      if (isLimitTooSmallError(error)) {
        fail(
          {
            kind: 'invalid-request',
            message: `The request could need more tokens than the upstream's quota ever grants at once (${error.message}).`,
          },
          'limit',
        );
        return;
      }
      throw error;
    } finally {
      res.off('close', onClose);
      // Attempts that may have been billed keep what is left of the worst case, apart from what was spent.
      const unknownNano = fates.unknown === 0 ? 0 : Math.max(0, Math.min(settle.worstNano * fates.unknown, settle.worstNano - spentNano));
      log.unknownCostUsd = unknownNano / NANO_USD;
      settle.settle(spentNano, unknownNano);
      if (keyUsage !== undefined) limited.settle?.(keyUsage);
    }
  }

  /** Keeps a whole 2xx answer under `key`; a store that fails loses the entry, never the request. */
  #keep(key: string, whole: { contentType: string; text: string; usage: TokenUsage | undefined }): void {
    const { contentType, text, usage } = whole;
    this.#cache!.put(key, { output: { contentType, text }, ...(usage !== undefined && { usage }) }).catch((error: unknown) =>
      this.#logger.warn({ err: error }, 'proxy cache write failed'),
    );
  }

  /** What a request of client API `api` on `route` goes by, worked out once: the same for every such request. */
  #planOf(route: GatewayRoute, api: string): RoutePlan {
    const key = `${route.name}\n${api}`;
    let plan = this.#plans.get(key);
    if (plan === undefined) {
      const routes = routesOf(route).map((each) => ({ route: each, members: each.members.filter((member) => member.client === api) }));
      const members = routes[0]!.members;
      plan = {
        routes,
        members,
        // What the budget holds: the dearest of every member the request may reach, fallbacks too.
        price: dearest(routes.flatMap((each) => each.members)),
        maxOutputCap: Math.min(...members.map((member) => member.maxOutputTokens)),
        // At most one token a byte of the body, and what the vendor adds to each request.
        perRequestTokens: Math.max(...members.map((member) => member.perRequestTokens)),
      };
      this.#plans.set(key, plan);
    }
    return plan;
  }

  /** Holds the request's worst case on the key's budget; undefined when it does not fit (refused). */
  #hold(key: KeyState, price: ProviderPrice | undefined, inputTokens: number, outputTokens: number): Held | Promise<Held | undefined> {
    const worstNano = price === undefined ? 0 : usageNanoUsd({ inputTokens, outputTokens }, price);
    if (key.budget === undefined || price === undefined) return { worstNano, settle: () => {} };
    return key.budget
      .reserve(worstNano)
      .then((hold) =>
        hold === undefined ? undefined : { worstNano, settle: (nano: number, unknownNano: number) => hold.settle(nano, unknownNano) },
      );
  }

  /** The body, or undefined past the cap (the rest left unread: the connection closes after the 413). */
  #readBody(req: IncomingMessage): Promise<Buffer | undefined> | undefined {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.#maxBodyBytes) return undefined;
    return readAll(req, this.#maxBodyBytes);
  }
}

/**
 * The cache key of a whole request: the client's API, the request as the client sent it, and each
 * member it may reach as the member calls its upstream (its address and model) — never a key.
 */
function cacheKeyOf(api: string, routes: readonly { readonly members: readonly UpstreamMember[] }[], body: unknown): string {
  const members = routes.flatMap((each) => each.members.map((member) => [member.target.baseUrl, member.target.model]));
  return answerKey({ proxy: api, members, body });
}
