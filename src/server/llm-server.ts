/**
 * The simulated provider as an HTTP server speaking the OpenAI and Anthropic APIs, with a quota
 * per API key — an offline stand-in for a real provider, for this pipeline and for anyone's code
 * written against the official SDKs.
 */

import { randomUUID } from 'node:crypto';
import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ValidateFunction } from 'ajv';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import { formatRateLimitHeaders, type LimitSnapshot } from '../provider/rate-limit-headers.ts';
import { KeyedLimiter, type RateLimitDecision } from '../limiter/keyed-limiter.ts';
import type { JsonSchema } from '../provider/json-schema.ts';
import { BadRequestError, isRateLimitError, isServerError, isTimeoutError } from '../provider/provider.ts';
import { SimulatedProvider, type SimulatedProviderOptions } from '../provider/simulated.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger, checkNumber, checkObject, checkString, expected } from '../validation/checks.ts';
import { anthropicApi } from './anthropic-api.ts';
import { type ChatAnswer, type ChatApi, type ChatRequest, type Failure, InvalidRequestError } from './chat-api.ts';
import { openAiApi } from './openai-api.ts';
import { SchemaAnswers, SchemaError } from '../provider/schema-answers.ts';
import { knownTask } from '../provider/simulated-answers.ts';
import { ServerMetrics, keyFingerprint } from './server-metrics.ts';
import { loadOptional } from '../optional-package.ts';

/** What `serve` is unless told otherwise. */
export const LLM_SERVER_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8080,
  /** Requests per second per API key. */
  rate: 10,
  /** Requests one key may make at once after a quiet spell. */
  burst: 10,
  /** Largest request body, bytes (1 MiB): a larger one gets 413 without being read. */
  maxBodyBytes: 1_048_576,
  /** What `GET /v1/models` lists; any model name is answered. */
  models: Object.freeze(['simulated']) as readonly string[],
  /** API keys `/metrics` labels apart; later ones are counted under `other`. */
  maxKeyLabels: 1000,
  /** Compiled JSON schemas kept, most recently used. */
  maxSchemas: 256,
});

/** Each answer's latency and fate, as the in-process simulated provider takes them. */
export type LlmServerSimulation = Pick<
  SimulatedProviderOptions,
  'minLatencyMs' | 'maxLatencyMs' | 'profile' | 'seed' | 'outage' | 'hangMs'
>;

export interface LlmServerOptions {
  /** Requests per second per API key, > 0; `Infinity` for no limit. Default 10. */
  readonly rate?: number;
  /** Requests one key may make at once after a quiet spell, a whole number >= 1. Default 10. */
  readonly burst?: number;
  /**
   * LLM tokens per minute per API key (the burst is one minute's worth): each answer takes its
   * prompt's tokens plus its output's, as `usage` reports them. Default: no token limit.
   */
  readonly tokensPerMinute?: number | undefined;
  /** Largest request body in bytes; a larger one gets 413 without being read. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Latency, failure profile, seed, outage window and hang time of the answers. Default: the simulated provider's defaults. */
  readonly simulation?: LlmServerSimulation;
  /** Model ids `GET /v1/models` lists. Default `['simulated']`; requests may name any model. */
  readonly models?: readonly string[];
  /** API keys the limiters hold at most (see `KeyedLimiter`). Default the limiter's. */
  readonly maxKeys?: number;
  /** API keys `/metrics` labels apart. Default 1000. */
  readonly maxKeyLabels?: number;
  /** Logs a line per request at `info` (keys by fingerprint only). Default silent. */
  readonly logger?: Logger;
  /** Time source of the quotas and the simulation. Default the system clock. */
  readonly clock?: Clock;
}

export interface ListenOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  readonly host?: string;
  /** Port; 0 picks a free one. Default 8080. */
  readonly port?: number;
}

/** What a server loads when it starts, not when it is imported. */
interface Loaded {
  readonly schemas: SchemaAnswers;
  readonly metrics: ServerMetrics;
  readonly countTokens: (text: string) => number;
  /** The text of the first `n` tokens of `text`. */
  readonly firstTokens: (text: string, n: number) => string;
}

/** One request on its way through the server. */
interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly api: ChatApi;
  /** The route as metrics label it: a known path, or `unknown`. */
  readonly route: string;
  readonly requestId: string;
  readonly startedMs: number;
  key: string | undefined;
}

const ROUTES = new Set(['/v1/chat/completions', '/v1/messages', '/v1/models', '/healthz', '/metrics']);
/** The API each chat route speaks; other routes answer in the API the request's headers name. */
const CHAT_ROUTES = new Map<string, ChatApi>([
  ['POST /v1/chat/completions', openAiApi],
  ['POST /v1/messages', anthropicApi],
]);
/** What free text and `json_object` answers are: the simulation's summary of the article in the prompt. */
const SUMMARY_SCHEMA: JsonSchema = Object.freeze({
  type: 'object',
  properties: { summary: { type: 'string' }, keywords: { type: 'array', items: { type: 'string' } } },
  required: ['summary', 'keywords'],
  additionalProperties: false,
});
/** nginx's status for a client that closed the connection before the answer. */
const CLIENT_CLOSED = 499;

/**
 * An HTTP server that answers OpenAI's `POST /v1/chat/completions` and Anthropic's `POST
 * /v1/messages` (not streamed) as the simulated provider would, plus `GET /v1/models`, `GET
 * /healthz` and `GET /metrics` (Prometheus). Each request, in order:
 *
 * 1. needs an API key (`Authorization: Bearer …`, or `x-api-key` on the Anthropic route): 401 without;
 * 2. is refused with 413 when its declared length is over `maxBodyBytes`, before a byte is read;
 * 3. takes a request from its key's quota — a `KeyedLimiter`, so two keys never share one — or
 *    gets 429 with `retry-after` (and `retry-after-ms` on the OpenAI route);
 * 4. is read (413 past the cap, the rest left unread) and parsed: 400 in the API's shape for bad JSON
 *    or fields, and for a schema that does not compile or admits no value;
 * 5. is answered after the simulated provider's latency, or fails as its profile, seed and outage
 *    say (429; 503 on the OpenAI route, 529 on Anthropic's; 504 for a hang); the pipeline's own
 *    task schemas get the lead-sentence summary and keywords or the lexicon sentiment of the
 *    article in the prompt, any other schema a value that validates against it (ajv checks it);
 * 6. with a token limit, takes its prompt's and answer's tokens from its key's, or gets 429.
 *
 * Every response with a key carries the vendor's rate-limit headers, computed when it is sent.
 */
export class LlmServer {
  readonly #server: Server;
  readonly #requests: KeyedLimiter;
  readonly #tokens: KeyedLimiter | undefined;
  readonly #provider: SimulatedProvider;
  readonly #maxBodyBytes: number;
  readonly #models: readonly string[];
  readonly #maxKeyLabels: number;
  readonly #logger: Logger;
  #loaded: Loaded | undefined;
  #inFlight = 0;
  #closing: Promise<void> | undefined;

  constructor(options: LlmServerOptions = {}) {
    checkObject('options', options);
    const {
      rate = LLM_SERVER_DEFAULTS.rate,
      burst = LLM_SERVER_DEFAULTS.burst,
      tokensPerMinute,
      maxBodyBytes = LLM_SERVER_DEFAULTS.maxBodyBytes,
      simulation = {},
      models = LLM_SERVER_DEFAULTS.models,
      maxKeys,
      maxKeyLabels = LLM_SERVER_DEFAULTS.maxKeyLabels,
      logger = silentLogger,
      clock = systemClock,
    } = options;
    checkNumber('rate', rate, { min: 0, minExclusive: true, finite: false, unit: 'requests per second' });
    // Headers say the limit in whole requests.
    checkInteger('burst', burst, 1);
    if (tokensPerMinute !== undefined) checkInteger('tokensPerMinute', tokensPerMinute, 1);
    checkInteger('maxBodyBytes', maxBodyBytes, 1);
    checkObject('simulation', simulation);
    if (!Array.isArray(models)) throw expected('models', 'an array of model ids', models);
    for (const model of models) checkString('each model', model);
    checkInteger('maxKeyLabels', maxKeyLabels, 0);

    this.#requests = new KeyedLimiter({ rate, burst, clock, maxKeys });
    this.#tokens =
      tokensPerMinute === undefined ? undefined : new KeyedLimiter({ rate: tokensPerMinute / 60, burst: tokensPerMinute, clock, maxKeys });
    // One provider for all: call n's fate depends on the seed and n, in arrival order, as in-process.
    this.#provider = new SimulatedProvider({ ...pickSimulation(simulation), name: 'serve', clock });
    this.#maxBodyBytes = maxBodyBytes;
    this.#models = Object.freeze([...models]);
    this.#maxKeyLabels = maxKeyLabels;
    this.#logger = logger;
    const listener = (req: IncomingMessage, res: ServerResponse) => void this.#handle(req, res);
    this.#server = createServer(listener);
    // Answering `Expect: 100-continue` ourselves lets an oversized upload be refused before it is sent.
    this.#server.on('checkContinue', listener);
  }

  /**
   * Loads what answering needs (ajv, prom-client, the tokenizer), then listens. Resolves with the
   * server's URL, `http://HOST:PORT`; rejects when the address cannot be had (EADDRINUSE, EACCES…).
   */
  async listen(options: ListenOptions = {}): Promise<string> {
    checkObject('options', options);
    const { host = LLM_SERVER_DEFAULTS.host, port = LLM_SERVER_DEFAULTS.port } = options;
    checkString('host', host);
    checkInteger('port', port, 0, 65_535);
    this.#loaded ??= await this.#load();
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    return this.url!;
  }

  /** `http://HOST:PORT` while listening. */
  get url(): string | undefined {
    const address = this.#server.address() as AddressInfo | null;
    if (address === null) return undefined;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  /** Requests being answered now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Stops taking connections and resolves once every request in flight has been answered (idle
   * keep-alive connections are closed at once, busy ones after their answer).
   */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve, reject) => {
      if (!this.#server.listening) return resolve();
      this.#server.close((error) => (error === undefined ? resolve() : reject(error)));
      this.#server.closeIdleConnections();
    });
    return this.#closing;
  }

  async #load(): Promise<Loaded> {
    const [schemas, metrics, tokenizer] = await Promise.all([
      SchemaAnswers.create(LLM_SERVER_DEFAULTS.maxSchemas),
      ServerMetrics.create(this.#maxKeyLabels, (key) => ({
        requests: this.#requests.take(key, 0).remaining,
        tokens: this.#tokens?.take(key, 0).remaining,
      })),
      loadOptional('gpt-tokenizer', 'the server (it counts tokens)', () => import('gpt-tokenizer')),
    ]);
    return {
      schemas,
      metrics,
      countTokens: (text) => tokenizer.countTokens(text),
      firstTokens: (text, n) => tokenizer.decode(tokenizer.encode(text).slice(0, n)),
    };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const route = `${req.method} ${path}`;
    const exchange: Exchange = {
      req,
      res,
      api: CHAT_ROUTES.get(route) ?? apiOf(req.headers),
      route: ROUTES.has(path) ? path : 'unknown',
      requestId: randomUUID().replaceAll('-', ''),
      startedMs: performance.now(),
      key: undefined,
    };
    this.#inFlight++;
    try {
      switch (route) {
        case 'POST /v1/chat/completions':
        case 'POST /v1/messages':
          return await this.#chat(exchange);
        case 'GET /v1/models':
          return this.#listModels(exchange);
        case 'GET /healthz':
          return this.#send(exchange, 200, { status: 'ok' });
        case 'GET /metrics':
          return await this.#scrape(exchange);
        default:
          exchange.key = exchange.api.keyOf(req.headers);
          return this.#fail(exchange, { kind: 'not-found', message: `Invalid URL (${req.method} ${path})` });
      }
    } catch (error) {
      this.#logger.error({ err: error, requestId: exchange.requestId }, 'request failed');
      if (res.headersSent) res.destroy();
      else this.#fail(exchange, { kind: 'server-error', message: 'The server had an error while answering the request.' });
    } finally {
      this.#inFlight--;
    }
  }

  async #chat(exchange: Exchange): Promise<void> {
    const { req, res, api } = exchange;
    const { schemas, countTokens, firstTokens } = this.#loaded!;
    const key = api.keyOf(req.headers);
    if (key === undefined) {
      const message =
        api === openAiApi
          ? "You didn't provide an API key. Provide it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY)."
          : 'x-api-key header is required';
      return this.#fail(exchange, { kind: 'authentication', message });
    }
    exchange.key = key;
    const declaredBytes = Number(req.headers['content-length']);
    if (declaredBytes > this.#maxBodyBytes) return this.#tooLarge(exchange);

    const admitted = this.#requests.take(key);
    if (!admitted.allowed) {
      const message = `Rate limit reached for requests: limit ${admitted.limit}, remaining 0. Please try again in ${Math.ceil(admitted.retryAfterMs)}ms.`;
      return this.#fail(
        exchange,
        { kind: 'rate-limited', limit: 'requests', message },
        { requests: admitted, retryAfterMs: admitted.retryAfterMs },
      );
    }

    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    const body = await readBody(req, this.#maxBodyBytes);
    if (body === 'too-large') return this.#tooLarge(exchange);
    if (body === 'gone') return this.#finish(exchange, CLIENT_CLOSED);

    let request: ChatRequest;
    let validate: ValidateFunction | undefined;
    try {
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch (error) {
        throw new InvalidRequestError(`We could not parse the JSON body of your request: ${(error as Error).message}`);
      }
      request = api.parse(json);
      const { shape } = request;
      // A schema that does not compile, or admits nothing, is refused before any latency is spent.
      if (shape.kind === 'schema' || shape.kind === 'tool') {
        validate = schemas.validator(shape.schema);
        // One no value can be made for is refused now too, not after the latency.
        if (knownTask(shape.name, shape.schema) === undefined) schemas.valueFor(shape.schema, [], validate);
      }
    } catch (error) {
      if (error instanceof InvalidRequestError) {
        return this.#fail(exchange, { kind: 'invalid-request', message: error.message, param: error.param, code: error.code });
      }
      if (error instanceof SchemaError) return this.#fail(exchange, invalidSchema(api, error));
      throw error;
    }

    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableEnded) abort.abort(new Error('the client closed the connection'));
    });
    let answer: { text?: string; value?: unknown };
    try {
      answer = await this.#answer(request, exchange.requestId, abort.signal);
    } catch (error) {
      if (abort.signal.aborted) return this.#finish(exchange, CLIENT_CLOSED);
      // Only a task-shaped schema that asks more than the task's answer, and admits nothing, gets here.
      if (error instanceof BadRequestError && error.cause instanceof SchemaError)
        return this.#fail(exchange, invalidSchema(api, error.cause));
      const failure = simulatedFailure(error);
      if (failure === undefined) throw error;
      const retryAfterMs = (error as { retryAfterMs?: number }).retryAfterMs;
      return this.#fail(exchange, failure, { retryAfterMs });
    }

    let content = answer.text ?? JSON.stringify(answer.value);
    let outputTokens = countTokens(content);
    // An answer longer than the request allows stops there, as a model's does: the vendor's "cut off" reason, its first tokens.
    const truncated = request.maxOutputTokens !== undefined && outputTokens > request.maxOutputTokens;
    if (truncated) {
      outputTokens = request.maxOutputTokens!;
      content = firstTokens(content, outputTokens);
    }
    const usage = { inputTokens: countTokens(request.promptText), outputTokens };
    const tokens = this.#tokens?.take(key, usage.inputTokens + usage.outputTokens);
    if (tokens !== undefined && !tokens.allowed) {
      const needed = usage.inputTokens + usage.outputTokens;
      const message =
        tokens.retryAfterMs === Infinity
          ? `Request too large for tokens per min: the answer needs ${needed} tokens, the limit is ${tokens.limit}.`
          : `Rate limit reached for tokens: limit ${tokens.limit}, remaining ${tokens.remaining}, requested ${needed}. Please try again in ${Math.ceil(tokens.retryAfterMs)}ms.`;
      return this.#fail(exchange, { kind: 'rate-limited', limit: 'tokens', message }, { tokens, retryAfterMs: tokens.retryAfterMs });
    }
    const full: ChatAnswer = { ...answer, content, ...usage, truncated };
    this.#send(exchange, 200, api.respond(request, full, exchange.requestId), this.#limitHeaders(exchange, { tokens }));
  }

  /**
   * The answer after the simulated provider's latency, or its failure: the provider answers the
   * request as it answers in process — the built-in tasks (and free text, its summary) from its own
   * analysis of the article, any other schema with a value made to fit.
   */
  async #answer(request: ChatRequest, id: string, signal: AbortSignal): Promise<{ text?: string; value?: unknown }> {
    const { shape } = request;
    const schemaAsked = shape.kind === 'schema' || shape.kind === 'tool';
    const { output } = await this.#provider.call(
      {
        task: schemaAsked ? shape.name : 'summarize',
        articleId: id,
        prompt: request.lastUserText,
        schema: schemaAsked ? shape.schema : SUMMARY_SCHEMA,
      },
      { signal },
    );
    if (shape.kind === 'text') return { text: String(output.summary) };
    return { value: output };
  }

  #listModels(exchange: Exchange): void {
    const { api, req } = exchange;
    exchange.key = api.keyOf(req.headers);
    if (exchange.key === undefined) this.#fail(exchange, { kind: 'authentication', message: 'An API key is required.' });
    else this.#send(exchange, 200, api.models(this.#models), this.#limitHeaders(exchange, {}));
  }

  async #scrape(exchange: Exchange): Promise<void> {
    const { metrics } = this.#loaded!;
    const text = await metrics.text();
    exchange.res.writeHead(200, { 'content-type': metrics.contentType, ...this.#connection() }).end(text);
    this.#finish(exchange, 200);
  }

  #tooLarge(exchange: Exchange): void {
    const message = `Request body too large: the limit is ${this.#maxBodyBytes} bytes.`;
    // The rest of the body is not read: the connection closes once the answer is out.
    this.#fail(exchange, { kind: 'too-large', message, code: 'request_too_large' }, { close: true });
  }

  #fail(
    exchange: Exchange,
    failure: Failure,
    limits: {
      requests?: RateLimitDecision;
      tokens?: RateLimitDecision | undefined;
      retryAfterMs?: number | undefined;
      close?: boolean;
    } = {},
  ): void {
    const { status, body } = exchange.api.fail(failure, `req_${exchange.requestId}`);
    const headers = exchange.key === undefined ? {} : this.#limitHeaders(exchange, limits);
    // A limit that can never be met (a request bigger than the bucket) is not worth retrying.
    if (failure.kind === 'rate-limited' && limits.retryAfterMs === Infinity) headers['x-should-retry'] = 'false';
    if (limits.close === true) headers.connection = 'close';
    this.#send(exchange, status, body, headers);
  }

  /** The vendor's rate-limit headers for the exchange's key, as they stand now unless a decision is given. */
  #limitHeaders(
    exchange: Exchange,
    limits: { requests?: RateLimitDecision; tokens?: RateLimitDecision | undefined; retryAfterMs?: number | undefined },
  ): Record<string, string> {
    const key = exchange.key!;
    const status: LimitSnapshot[] = [snapshot('requests', limits.requests ?? this.#requests.take(key, 0))];
    if (this.#tokens !== undefined) status.push(snapshot('tokens', limits.tokens ?? this.#tokens.take(key, 0)));
    const retryAfterMs = limits.retryAfterMs !== undefined && Number.isFinite(limits.retryAfterMs) ? limits.retryAfterMs : undefined;
    const headers = formatRateLimitHeaders(exchange.api.headerStyle, status, retryAfterMs);
    if (!exchange.api.retryAfterMs) delete headers['retry-after-ms'];
    return headers;
  }

  #send(exchange: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const { api, res } = exchange;
    res
      .writeHead(status, {
        'content-type': 'application/json',
        [api.requestIdHeader]: `req_${exchange.requestId}`,
        ...headers,
        ...this.#connection(),
      })
      .end(JSON.stringify(body));
    this.#finish(exchange, status);
  }

  /** While closing, every answer ends its connection: keep-alive would hold the server open. */
  #connection(): Record<string, string> {
    return this.#closing === undefined ? {} : { connection: 'close' };
  }

  #finish(exchange: Exchange, status: number): void {
    const seconds = (performance.now() - exchange.startedMs) / 1000;
    this.#loaded?.metrics.observe(exchange.route, status, this.#loaded.metrics.labelOf(exchange.key), seconds);
    if (this.#logger.isLevelEnabled('info')) {
      const { req, requestId, key } = exchange;
      const fields = { method: req.method, path: req.url, status, ms: Math.round(seconds * 1e4) / 10, requestId };
      this.#logger.info(key === undefined ? fields : { ...fields, key: keyFingerprint(key) }, 'request');
    }
  }
}

/** The API a request outside the two chat routes speaks, by its headers: Anthropic's name their key and version. */
function apiOf(headers: IncomingHttpHeaders): ChatApi {
  return headers['x-api-key'] !== undefined || headers['anthropic-version'] !== undefined ? anthropicApi : openAiApi;
}

function snapshot(kind: 'requests' | 'tokens', decision: RateLimitDecision): LimitSnapshot {
  return { kind, limit: decision.limit, remaining: decision.remaining, resetMs: decision.resetMs };
}

function invalidSchema(api: ChatApi, error: SchemaError): Failure {
  const param = api === openAiApi ? 'response_format.json_schema.schema' : 'tools';
  return { kind: 'invalid-request', param, message: `Invalid schema: ${error.message}` };
}

/** The simulated provider's failure as the server answers it; undefined for anything else. */
function simulatedFailure(error: unknown): Failure | undefined {
  if (isRateLimitError(error)) {
    return { kind: 'rate-limited', limit: 'requests', message: 'The server is receiving too many requests: please try again later.' };
  }
  if (isServerError(error)) return { kind: 'overloaded', message: `The server is overloaded or down: ${error.message}.` };
  if (isTimeoutError(error)) return { kind: 'timeout', message: 'The request timed out before an answer was ready.' };
  return undefined;
}

function pickSimulation(simulation: LlmServerSimulation): LlmServerSimulation {
  const { minLatencyMs, maxLatencyMs, profile, seed, outage, hangMs } = simulation;
  const picked: Record<string, unknown> = { minLatencyMs, maxLatencyMs, profile, seed, outage, hangMs };
  for (const [name, value] of Object.entries(picked)) if (value === undefined) delete picked[name];
  return picked as LlmServerSimulation;
}

/**
 * The request body, up to `maxBytes`: `'too-large'` as soon as it grows past them (the rest is
 * left unread), `'gone'` when the client goes away first.
 */
function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large' | 'gone'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        stop();
        req.pause();
        resolve('too-large');
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, bytes));
    };
    const onError = (error: Error) => {
      stop();
      if ((error as NodeJS.ErrnoException).code === 'ECONNRESET') resolve('gone');
      else reject(error);
    };
    const onClose = () => {
      stop();
      resolve('gone');
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
