/**
 * The simulated provider as an HTTP server speaking the OpenAI and Anthropic APIs, with a quota
 * per API key — an offline stand-in for a real provider, for this pipeline and for anyone's code
 * written against the official SDKs or the frameworks built on them.
 */

import { randomUUID } from 'node:crypto';
import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.ts';
import { KeyedLimiter, type RateLimitDecision } from '../limiter/keyed-limiter.ts';
import type { JsonSchema } from '../provider/json-schema.ts';
import { BadRequestError, isMalformedOutputError, isRateLimitError, isServerError, isTimeoutError } from '../provider/provider.ts';
import { formatRateLimitHeaders, type LimitSnapshot } from '../vendors/rate-limit-headers.ts';
import { OUTAGE_PROFILE_WINDOW, SimulatedProvider, type OutageWindow, type SimulatedProviderOptions } from '../simulator/simulated.ts';
import { silentLogger } from '../silent-logger.ts';
import { checkBoolean, checkInteger, checkNumber, checkObject, checkString, expected } from '../validation/checks.ts';
import { anthropicApi, countTokensPrompt } from './anthropic-api.ts';
import { answerChoice, type Draft, type Tokenizer } from './answer-choices.ts';
import { type ChatAnswer, type ChatApi, type ChatRequest, type Failure, InvalidRequestError, type ParseOptions } from './chat-api.ts';
import { openAiApi } from './openai-api.ts';
import { schemaInPrompt } from './prompt-schema.ts';
import { readBody } from './request-body.ts';
import { ResponseStore } from './response-store.ts';
import { responsesApi } from './responses-api.ts';
import { SchemaError } from '../provider/schema-validators.ts';
import { SchemaAnswers } from '../simulator/schema-answers.ts';
import { knownTask } from '../simulator/simulated-answers.ts';
import { loadOptional } from '../optional-package.ts';
import { withDescribedConstraints } from './described-constraints.ts';
import { ServerMetrics, keyFingerprint } from './server-metrics.ts';
import { StreamFaults } from './stream-faults.ts';
import { writeStream } from './stream-writer.ts';

/** What `serve` is unless told otherwise. */
export const LLM_SERVER_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8080,
  /** Requests per second per API key: the headers state it per minute (600). */
  rate: 10,
  /** Requests one key may make at once after a quiet spell. */
  burst: 10,
  /** Output tokens a stream sends per second after its first: a current small model's pace. */
  tokensPerSecond: 80,
  /** Share of streams whose connection drops midway. */
  failMidStream: 0,
  /** Largest request body, bytes (1 MiB): a larger one gets 413 without being read. */
  maxBodyBytes: 1_048_576,
  /** What `GET /v1/models` lists; any model name is answered. */
  models: Object.freeze(['simulated']) as readonly string[],
  /** API keys `/metrics` labels apart; later ones are counted under `other`. */
  maxKeyLabels: 1000,
  /** Compiled JSON schemas kept, most recently used. */
  maxSchemas: 256,
  /** Responses API answers kept for `GET /v1/responses/{id}` and `previous_response_id`, most recent. */
  maxResponses: 10_000,
});

/** Each answer's latency and fate, as the in-process simulated provider takes them. */
export type LlmServerSimulation = Pick<
  SimulatedProviderOptions,
  'minLatencyMs' | 'maxLatencyMs' | 'profile' | 'seed' | 'outage' | 'hangMs'
>;

/** What a {@link LlmServer} is made with: every option optional, its default beside it. */
export interface LlmServerOptions {
  /**
   * Requests per second per API key, > 0; `Infinity` for no limit. The headers state it per minute
   * (`x-ratelimit-limit-requests` = 60 × rate, rounded down), as the vendors state theirs.
   * @default LLM_SERVER_DEFAULTS.rate (10)
   */
  readonly rate?: number;
  /** Requests one key may make at once after a quiet spell, a whole number >= 1. @default LLM_SERVER_DEFAULTS.burst (10) */
  readonly burst?: number;
  /**
   * LLM tokens per minute per API key (the burst is one minute's worth): each answer takes its
   * prompt's tokens plus its output's, as `usage` reports them.
   * @default none (no token limit)
   */
  readonly tokensPerMinute?: number | undefined;
  /**
   * Output tokens a streamed answer sends per second, after its first (which comes after the latency); `Infinity` sends all at once.
   * @default LLM_SERVER_DEFAULTS.tokensPerSecond (80)
   */
  readonly tokensPerSecond?: number;
  /**
   * Share of streams, in [0, 1], whose connection drops after some of their tokens (seeded with the simulation's seed).
   * @default LLM_SERVER_DEFAULTS.failMidStream (0)
   */
  readonly failMidStream?: number;
  /**
   * Take any schema marked `strict: true`, as other OpenAI-compatible servers do, instead of enforcing OpenAI's strict-mode rules.
   * @default false
   */
  readonly lenientSchemas?: boolean;
  /** Largest request body in bytes; a larger one gets 413 without being read. @default LLM_SERVER_DEFAULTS.maxBodyBytes (1 MiB) */
  readonly maxBodyBytes?: number;
  /** Latency, failure profile, seed, outage window and hang time of the answers. @default {} (the simulated provider's defaults) */
  readonly simulation?: LlmServerSimulation;
  /** Model ids `GET /v1/models` lists; requests may name any model. @default LLM_SERVER_DEFAULTS.models (["simulated"]) */
  readonly models?: readonly string[];
  /**
   * The API keys the server accepts (printable ASCII, no spaces: what a header carries); any other
   * key gets the vendor's 401 — OpenAI's `invalid_api_key`, Anthropic's `authentication_error` —
   * as a revoked or mistyped key does, quoted masked if at all, and takes nothing from any quota.
   * @default none (every non-empty key is accepted)
   */
  readonly apiKeys?: readonly string[] | undefined;
  /** API keys the limiters hold at most (see `KeyedLimiter`). @default KEYED_LIMITER_DEFAULTS.maxKeys (1,000,000: the limiter's) */
  readonly maxKeys?: number;
  /** API keys `/metrics` labels apart. @default LLM_SERVER_DEFAULTS.maxKeyLabels (1000) */
  readonly maxKeyLabels?: number;
  /** Logs a line per request at `info` (keys by fingerprint only). @default silentLogger (says nothing) */
  readonly logger?: Logger;
  /** Time source of the quotas, the simulation and the streams' pacing. @default systemClock */
  readonly clock?: Clock;
}

/** Where {@link LlmServer.listen} listens. */
export interface ListenOptions {
  /** Address to listen on. @default LLM_SERVER_DEFAULTS.host ("127.0.0.1") */
  readonly host?: string;
  /** Port; 0 picks a free one. @default LLM_SERVER_DEFAULTS.port (8080) */
  readonly port?: number;
}

/** What a server loads when it starts, not when it is imported. */
interface Loaded {
  readonly schemas: SchemaAnswers;
  readonly metrics: ServerMetrics;
  readonly tokenizer: Tokenizer;
}

/** One request on its way through the server. */
interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly api: ChatApi;
  /** The route as metrics label it: a known path (ids as `{id}`), or `unknown`. */
  readonly route: string;
  readonly requestId: string;
  readonly startedMs: number;
  key: string | undefined;
  /** A key the server does not accept: logged by its fingerprint, as the exchange's key is, and given nothing else. */
  refusedKey: string | undefined;
}

/**
 * A prepared request: what the API read, and the schema the answer is made for — the request's own,
 * with the constraints its descriptions state when those can be kept to; for free text and JSON mode
 * the simulation's summary, or the schema the prompt gives.
 */
interface Prepared {
  readonly request: ChatRequest;
  readonly answerSchema: JsonSchema;
}

/** What a failure's headers describe: the decisions that refused it (else the key's quota as it stands), its wait, whether to close. */
interface LimitContext {
  readonly requests?: RateLimitDecision | undefined;
  readonly tokens?: RateLimitDecision | undefined;
  readonly retryAfterMs?: number | undefined;
  readonly close?: boolean;
}

/** A request the server answers with a failure, thrown by the step that finds it. */
class Refusal extends Error {
  override readonly name = 'Refusal';

  constructor(
    readonly failure: Failure,
    readonly limits: LimitContext = {},
  ) {
    super(failure.message);
  }
}

/** The client went away before the answer: nothing to send, counted as 499. */
class ClientGone extends Error {
  override readonly name = 'ClientGone';
}

/** Routes by method and path; `{id}` stands for the last segment. */
type Route =
  | 'POST /v1/chat/completions'
  | 'POST /v1/messages'
  | 'POST /v1/responses'
  | 'POST /v1/messages/count_tokens'
  | 'GET /v1/responses/{id}'
  | 'GET /v1/models'
  | 'GET /v1/models/{id}'
  | 'GET /healthz'
  | 'GET /metrics';

const ROUTES: ReadonlySet<string> = new Set<Route>([
  'POST /v1/chat/completions',
  'POST /v1/messages',
  'POST /v1/responses',
  'POST /v1/messages/count_tokens',
  'GET /v1/responses/{id}',
  'GET /v1/models',
  'GET /v1/models/{id}',
  'GET /healthz',
  'GET /metrics',
]);
/** Paths whose last segment is an id. */
const WITH_ID = /^(\/v1\/(?:responses|models))\/([^/]+)$/;
/** What free text and `json_object` answers are: the simulation's summary of the article in the prompt. */
const SUMMARY_SCHEMA: JsonSchema = Object.freeze({
  type: 'object',
  properties: { summary: { type: 'string' }, keywords: { type: 'array', items: { type: 'string' } } },
  required: ['summary', 'keywords'],
  additionalProperties: false,
});
/** nginx's status for a client that closed the connection before the answer. */
const CLIENT_CLOSED = 499;
/** The whole requests a per-minute limit states: rounded down, so a client taking it as its rate is never over. */
const PER_MINUTE_EPSILON = 1e-9;

/**
 * An HTTP server that answers OpenAI's `POST /v1/chat/completions` and `POST /v1/responses`, and
 * Anthropic's `POST /v1/messages` (each whole or streamed) as the simulated provider would, plus
 * `POST /v1/messages/count_tokens`, `GET /v1/responses/{id}`, `GET /v1/models[/{id}]`, `GET
 * /healthz` and `GET /metrics` (Prometheus). Every chat request goes through the same steps:
 *
 * 1. needs an API key (`Authorization: Bearer …`, or `x-api-key` on the Anthropic route), one of
 *    `apiKeys` when those are given: 401 without, or with another;
 * 2. is refused with 413 when its declared length is over `maxBodyBytes`, before a byte is read;
 * 3. takes a request from its key's quota — a `KeyedLimiter`, so two keys never share one — or
 *    gets 429 with `retry-after` (and `retry-after-ms` on the OpenAI routes);
 * 4. is read (413 past the cap, the rest left unread) and parsed: 400 in the API's shape for bad JSON,
 *    for a field it does not take (none is ignored), for a schema OpenAI's strict mode refuses, that
 *    does not compile or that admits no value;
 * 5. is answered after the simulated provider's latency, or fails as its profile, seed and outage
 *    say (429; 503 on the OpenAI routes, 529 on Anthropic's; 504 for a hang); the pipeline's own
 *    task schemas get the lead-sentence summary and keywords or the lexicon sentiment of the
 *    article in the prompt, any other schema a value that validates against it (ajv checks it);
 * 6. ends as a model's output does, at the first stop sequence or the output token limit;
 * 7. with a token limit, takes its prompt's and answer's tokens from its key's, or gets 429;
 * 8. is sent whole, or streamed in the API's events at `tokensPerSecond` — a stream the client
 *    leaves ends there, one the fault or an outage cuts ends early (all counted in `/metrics`).
 *
 * Every response to an accepted key carries the vendor's rate-limit headers, computed when it is sent.
 */
export class LlmServer {
  readonly #server: Server;
  readonly #clock: Clock;
  readonly #requests: KeyedLimiter;
  readonly #tokens: KeyedLimiter | undefined;
  readonly #provider: SimulatedProvider;
  readonly #outage: OutageWindow | undefined;
  readonly #createdAtMs: number;
  readonly #tokensPerSecond: number;
  readonly #faults: StreamFaults;
  readonly #parseOptions: ParseOptions;
  readonly #responses = new ResponseStore(LLM_SERVER_DEFAULTS.maxResponses);
  readonly #maxBodyBytes: number;
  readonly #models: readonly string[];
  readonly #apiKeys: ReadonlySet<string> | undefined;
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
      tokensPerSecond = LLM_SERVER_DEFAULTS.tokensPerSecond,
      failMidStream = LLM_SERVER_DEFAULTS.failMidStream,
      lenientSchemas = false,
      maxBodyBytes = LLM_SERVER_DEFAULTS.maxBodyBytes,
      simulation = {},
      models = LLM_SERVER_DEFAULTS.models,
      apiKeys,
      maxKeys,
      maxKeyLabels = LLM_SERVER_DEFAULTS.maxKeyLabels,
      logger = silentLogger,
      clock = systemClock,
    } = options;
    checkNumber('rate', rate, { min: 0, minExclusive: true, finite: false, unit: 'requests per second' });
    // Headers say the limit in whole requests.
    checkInteger('burst', burst, 1);
    if (tokensPerMinute !== undefined) checkInteger('tokensPerMinute', tokensPerMinute, 1);
    checkNumber('tokensPerSecond', tokensPerSecond, { min: 0, minExclusive: true, finite: false, unit: 'tokens per second' });
    checkNumber('failMidStream', failMidStream, { min: 0, max: 1 });
    checkBoolean('lenientSchemas', lenientSchemas);
    checkInteger('maxBodyBytes', maxBodyBytes, 1);
    checkObject('simulation', simulation);
    if (!Array.isArray(models)) throw expected('models', 'an array of model ids', models);
    for (const model of models) checkString('each model', model);
    checkInteger('maxKeyLabels', maxKeyLabels, 0);
    if (apiKeys !== undefined) checkApiKeys(apiKeys);

    this.#clock = clock;
    this.#requests = new KeyedLimiter({ rate, burst, clock, maxKeys });
    this.#tokens =
      tokensPerMinute === undefined ? undefined : new KeyedLimiter({ rate: tokensPerMinute / 60, burst: tokensPerMinute, clock, maxKeys });
    // One provider for all: call n's fate depends on the seed and n, in arrival order, as in-process.
    const picked = pickSimulation(simulation);
    this.#provider = new SimulatedProvider({ ...picked, name: 'serve', clock });
    this.#outage = picked.outage ?? (picked.profile === 'outage' ? OUTAGE_PROFILE_WINDOW : undefined);
    this.#createdAtMs = clock.now();
    this.#tokensPerSecond = tokensPerSecond;
    this.#faults = new StreamFaults(failMidStream, picked.seed ?? 1);
    this.#parseOptions = { lenientSchemas };
    this.#maxBodyBytes = maxBodyBytes;
    this.#models = Object.freeze([...models]);
    this.#apiKeys = apiKeys === undefined ? undefined : new Set(apiKeys);
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

  /** Requests being answered now, streams included. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Stops taking connections and resolves once every request in flight has been answered (idle
   * keep-alive connections are closed at once, busy ones after their answer; streams run to their end).
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
      tokenizer: {
        encode: (text) => tokenizer.encode(text),
        decode: (tokens) => tokenizer.decode(tokens),
        pieces: (tokens) => [...tokenizer.decodeGenerator(tokens)],
      },
    };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const withId = WITH_ID.exec(path);
    const route = `${req.method} ${withId === null ? path : `${withId[1]}/{id}`}`;
    const api =
      route === 'POST /v1/chat/completions'
        ? openAiApi
        : route === 'POST /v1/messages' || route === 'POST /v1/messages/count_tokens'
          ? anthropicApi
          : route === 'POST /v1/responses' || route === 'GET /v1/responses/{id}'
            ? responsesApi
            : apiOf(req.headers);
    const exchange: Exchange = {
      req,
      res,
      api,
      route: ROUTES.has(route) ? route.slice(route.indexOf(' ') + 1) : 'unknown',
      requestId: randomUUID().replaceAll('-', ''),
      startedMs: performance.now(),
      key: undefined,
      refusedKey: undefined,
    };
    const id = withId === null ? '' : decodeURIComponent(withId[2]!);
    this.#inFlight++;
    try {
      switch (route as Route) {
        case 'POST /v1/chat/completions':
        case 'POST /v1/messages':
        case 'POST /v1/responses':
          return await this.#chat(exchange);
        case 'POST /v1/messages/count_tokens':
          return await this.#countTokens(exchange);
        case 'GET /v1/responses/{id}':
          return this.#retrieveResponse(exchange, id);
        case 'GET /v1/models':
          return this.#answerKeyed(exchange, () => api.models(this.#models));
        case 'GET /v1/models/{id}':
          return this.#answerKeyed(exchange, () => api.model(id));
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

  /**
   * The story of a chat request, the same on every chat route: each step says what it does and
   * returns what the next needs, or throws a {@link Refusal} (answered in the route's API shape) or
   * {@link ClientGone}. What differs per route — parsing, the answer's shape, its stream, errors —
   * is the `ChatApi`'s.
   */
  async #chat(exchange: Exchange): Promise<void> {
    try {
      this.#authenticate(exchange);
      this.#refuseDeclaredOversize(exchange);
      this.#admit(exchange);
      const body = await this.#readJson(exchange);
      const prepared = this.#prepare(exchange, body);
      const draft = await this.#generate(exchange, prepared);
      const answer = this.#complete(prepared.request, draft);
      const tokens = this.#chargeTokens(exchange, answer);
      await this.#deliver(exchange, prepared.request, answer, tokens);
    } catch (error) {
      this.#answerStop(exchange, error);
    }
  }

  /**
   * 401 without an API key, or with one the server does not accept; the key is the exchange's from
   * here on. A refused key is not: it gets no quota nor metrics label of its own, so keys made up by
   * the thousand fill no limiter; only the log names it, by its fingerprint.
   */
  #authenticate(exchange: Exchange): void {
    const { api, req } = exchange;
    const key = api.keyOf(req.headers);
    if (key === undefined) throw new Refusal({ kind: 'authentication', message: api.missingKeyMessage });
    if (this.#apiKeys !== undefined && !this.#apiKeys.has(key)) {
      exchange.refusedKey = key;
      throw new Refusal({ kind: 'authentication', message: api.refusedKeyMessage(key), code: 'invalid_api_key' });
    }
    exchange.key = key;
  }

  /** 413 by the declared length, before a byte is read. */
  #refuseDeclaredOversize(exchange: Exchange): void {
    if (Number(exchange.req.headers['content-length']) > this.#maxBodyBytes) throw this.#tooLarge();
  }

  /** Takes a request from the key's quota, or 429 with the wait. */
  #admit(exchange: Exchange): void {
    const admitted = this.#requests.take(exchange.key!);
    if (admitted.allowed) return;
    const message = `Rate limit reached on requests per min (RPM): Limit ${this.#requestsPerMinute()}, Remaining 0, Requested 1. Please try again in ${Math.ceil(admitted.retryAfterMs)}ms.`;
    throw new Refusal({ kind: 'rate-limited', limit: 'requests', message }, { requests: admitted, retryAfterMs: admitted.retryAfterMs });
  }

  /** The body, read up to the cap and parsed as JSON: 413 past the cap, 400 for what does not parse. */
  async #readJson(exchange: Exchange): Promise<unknown> {
    const { req, res } = exchange;
    // Only now that the request is admitted is the client told to send its body.
    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    const body = await readBody(req, this.#maxBodyBytes);
    if (body === 'too-large') throw this.#tooLarge();
    if (body === 'gone') throw new ClientGone();
    try {
      return JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new Refusal({
        kind: 'invalid-request',
        message: `We could not parse the JSON body of your request: ${(error as Error).message}`,
      });
    }
  }

  /**
   * The request as the API reads it, and the schema its answer is made for: one that does not
   * compile, or admits nothing, is refused before any latency is spent.
   */
  #prepare(exchange: Exchange, body: unknown): Prepared {
    const { api } = exchange;
    const key = exchange.key!;
    try {
      const request = api.parse(body, { ...this.#parseOptions, previousResponse: (id) => this.#responses.find(key, id) });
      const { shape } = request;
      if (shape.kind === 'text') return { request, answerSchema: SUMMARY_SCHEMA };
      if (shape.kind === 'json-object') return { request, answerSchema: this.#promptedSchema(request) ?? SUMMARY_SCHEMA };
      return { request, answerSchema: this.#schemaToAnswer(shape.name, shape.schema) };
    } catch (error) {
      throw asRefusal(api, error);
    }
  }

  /**
   * The request's schema, checked: it compiles and admits a value (SchemaError otherwise). With the
   * constraints its descriptions state added, when values fit that and the schema as sent alike.
   */
  #schemaToAnswer(name: string, schema: JsonSchema): JsonSchema {
    const { schemas } = this.#loaded!;
    const validate = schemas.validator(schema);
    // The pipeline's own tasks are answered from the article; any other schema must admit a value.
    if (knownTask(name, schema) !== undefined) return schema;
    const described = withDescribedConstraints(schema);
    if (described !== schema) {
      try {
        const value = schemas.valueFor(described, [], schemas.validator(described));
        if (validate(value)) return described;
      } catch (error) {
        // Words that make no schema, or one nothing fits, are words only.
        if (!(error instanceof SchemaError)) throw error;
      }
    }
    schemas.valueFor(schema, [], validate);
    return schema;
  }

  /**
   * For JSON mode, the schema the prompt gives, when it gives one that can be answered; undefined
   * otherwise (the answer is then the article's summary as JSON). A prompt's schema is the client's
   * text, not a parameter: one that cannot be answered is no error.
   */
  #promptedSchema(request: ChatRequest): JsonSchema | undefined {
    const schema = schemaInPrompt(request.promptText);
    if (schema === undefined) return undefined;
    try {
      return this.#schemaToAnswer('json_object', schema);
    } catch (error) {
      if (error instanceof SchemaError) return undefined;
      throw error;
    }
  }

  /**
   * The answer after the simulated provider's latency (a stream's first token), or its failure: the
   * provider answers as it answers in process — the built-in tasks (and free text, its summary) from
   * its own analysis of the article, any other schema with a value made to fit. A client that goes
   * away meanwhile ends the wait.
   */
  async #generate(exchange: Exchange, { request, answerSchema }: Prepared): Promise<Draft> {
    const { res, api } = exchange;
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableEnded) abort.abort(new Error('the client closed the connection'));
    };
    res.once('close', onClose);
    const { shape } = request;
    try {
      const { output } = await this.#provider.call(
        {
          ...taskOfAnswer(request, answerSchema),
          articleId: exchange.requestId,
          schema: answerSchema,
          // A conversation the model has spoken in (a repair) is answered fit, as the provider answers it in process.
          ...(request.answered === true && { messages: [{ role: 'user', content: request.lastUserText }] }),
        },
        { signal: abort.signal },
      );
      return shape.kind === 'text' ? { text: String(output.summary) } : { value: output };
    } catch (error) {
      if (abort.signal.aborted) throw new ClientGone();
      // The profile's unfit answer is sent as a model sends one: a 200 the client finds unfit.
      if (isMalformedOutputError(error) && error.answer !== undefined) return unfitDraft(error.answer, shape.kind);
      // Only a task-shaped schema that asks more than the task's answer, and admits nothing, gets here.
      if (error instanceof BadRequestError && error.cause instanceof SchemaError) throw asRefusal(api, error.cause);
      const failure = simulatedFailure(error);
      if (failure !== undefined) throw new Refusal(failure, { retryAfterMs: (error as { retryAfterMs?: number }).retryAfterMs });
      throw error;
    } finally {
      res.off('close', onClose);
    }
  }

  /** The draft as sent, once per choice asked for, each ended as a model's output ends; and the usage. */
  #complete(request: ChatRequest, draft: Draft): ChatAnswer {
    const { tokenizer } = this.#loaded!;
    const choice = answerChoice(request, draft, tokenizer);
    // A simulation is not sampled: every choice is the same answer, and each is counted.
    const choices = Array.from({ length: request.choices ?? 1 }, () => choice);
    return {
      choices,
      inputTokens: tokenizer.encode(request.promptText).length,
      outputTokens: choice.outputTokens * choices.length,
      createdSeconds: Math.floor(Date.now() / 1000),
    };
  }

  /** With a token limit, takes the answer's prompt and output tokens from the key's, or 429. */
  #chargeTokens(exchange: Exchange, answer: ChatAnswer): RateLimitDecision | undefined {
    const needed = answer.inputTokens + answer.outputTokens;
    const tokens = this.#tokens?.take(exchange.key!, needed);
    if (tokens === undefined || tokens.allowed) return tokens;
    const message =
      tokens.retryAfterMs === Infinity
        ? `Request too large on tokens per min (TPM): Limit ${tokens.limit}, Requested ${needed}. The input or output tokens must be reduced in order to run successfully.`
        : `Rate limit reached on tokens per min (TPM): Limit ${tokens.limit}, Remaining ${tokens.remaining}, Requested ${needed}. Please try again in ${Math.ceil(tokens.retryAfterMs)}ms.`;
    throw new Refusal({ kind: 'rate-limited', limit: 'tokens', message }, { tokens, retryAfterMs: tokens.retryAfterMs });
  }

  /** The answer in the API's shape — whole, or streamed — with the key's quota as it stands; kept when the API keeps its answers. */
  async #deliver(exchange: Exchange, request: ChatRequest, answer: ChatAnswer, tokens: RateLimitDecision | undefined): Promise<void> {
    const { api, requestId } = exchange;
    const keptAs = api.keptAs?.(request, requestId);
    if (keptAs !== undefined) {
      const output = answer.choices[0]!.content;
      this.#responses.keep(exchange.key!, keptAs, {
        body: api.respond(request, answer, requestId),
        promptText: `${request.promptText}\n${output}`,
      });
    }
    if (request.stream === undefined) {
      this.#send(exchange, 200, api.respond(request, answer, requestId), this.#limitHeaders(exchange, { tokens }));
      return;
    }
    await this.#stream(exchange, request, answer, tokens);
  }

  /** The answer as the API's server-sent events, paced, and ended early by the client, the mid-stream fault or an outage. */
  async #stream(exchange: Exchange, request: ChatRequest, answer: ChatAnswer, tokens: RateLimitDecision | undefined): Promise<void> {
    const { api, res, requestId } = exchange;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      [api.requestIdHeader]: `req_${requestId}`,
      ...this.#limitHeaders(exchange, { tokens }),
      ...this.#connection(),
    });
    // The client knows the stream has begun before the first token comes.
    res.flushHeaders();
    const events = api.stream(request, answer, requestId);
    const outage: Failure = { kind: 'overloaded', message: 'The server is overloaded or down: service unavailable (503): outage.' };
    const outcome = await writeStream(res, events, {
      clock: this.#clock,
      tokensPerSecond: this.#tokensPerSecond,
      dropAfter: this.#faults.dropAfter(events),
      failure: () => (this.#inOutage() ? api.streamFailure(outage, `req_${requestId}`) : undefined),
    });
    this.#loaded!.metrics.streamEnded(exchange.route, outcome);
    this.#finish(exchange, 200);
  }

  /** What a step's throw becomes: the refusal answered, or 499 for a client gone; anything else is the server's own error. */
  #answerStop(exchange: Exchange, error: unknown): void {
    if (error instanceof Refusal) this.#fail(exchange, error.failure, error.limits);
    else if (error instanceof ClientGone) this.#finish(exchange, CLIENT_CLOSED);
    else throw error;
  }

  /**
   * `count_tokens`: the prompt's tokens as a message with this body would count them. Anthropic
   * limits it apart from messages; here it takes nothing from the key's quota.
   */
  async #countTokens(exchange: Exchange): Promise<void> {
    try {
      this.#authenticate(exchange);
      this.#refuseDeclaredOversize(exchange);
      const body = await this.#readJson(exchange);
      let prompt: string;
      try {
        prompt = countTokensPrompt(body);
      } catch (error) {
        throw asRefusal(exchange.api, error);
      }
      const inputTokens = this.#loaded!.tokenizer.encode(prompt).length;
      this.#send(exchange, 200, { input_tokens: inputTokens }, this.#limitHeaders(exchange, {}));
    } catch (error) {
      this.#answerStop(exchange, error);
    }
  }

  /** A response the key was given before, as it was given; 404 for one it was not (or that is no longer kept). */
  #retrieveResponse(exchange: Exchange, id: string): void {
    try {
      this.#authenticate(exchange);
      const kept = this.#responses.find(exchange.key!, id);
      if (kept === undefined)
        throw new Refusal({ kind: 'not-found', message: `Response with id '${id}' not found.`, param: 'response_id' });
      this.#send(exchange, 200, kept.body, this.#limitHeaders(exchange, {}));
    } catch (error) {
      this.#answerStop(exchange, error);
    }
  }

  /** A read-only route that needs a key and takes nothing from its quota. */
  #answerKeyed(exchange: Exchange, body: () => unknown): void {
    try {
      this.#authenticate(exchange);
      this.#send(exchange, 200, body(), this.#limitHeaders(exchange, {}));
    } catch (error) {
      this.#answerStop(exchange, error);
    }
  }

  async #scrape(exchange: Exchange): Promise<void> {
    const { metrics } = this.#loaded!;
    const text = await metrics.text();
    exchange.res.writeHead(200, { 'content-type': metrics.contentType, ...this.#connection() }).end(text);
    this.#finish(exchange, 200);
  }

  #tooLarge(): Refusal {
    const message = `Request body too large: the limit is ${this.#maxBodyBytes} bytes.`;
    // The rest of the body is not read: the connection closes once the answer is out.
    return new Refusal({ kind: 'too-large', message, code: 'request_too_large' }, { close: true });
  }

  #inOutage(): boolean {
    const elapsedMs = this.#clock.now() - this.#createdAtMs;
    return this.#outage !== undefined && elapsedMs >= this.#outage.startMs && elapsedMs < this.#outage.endMs;
  }

  #fail(exchange: Exchange, failure: Failure, limits: LimitContext = {}): void {
    const { status, body } = exchange.api.fail(failure, `req_${exchange.requestId}`);
    const headers = exchange.key === undefined ? {} : this.#limitHeaders(exchange, limits);
    // A limit that can never be met (a request bigger than the bucket) is not worth retrying.
    if (failure.kind === 'rate-limited' && limits.retryAfterMs === Infinity) headers['x-should-retry'] = 'false';
    if (limits.close === true) headers.connection = 'close';
    this.#send(exchange, status, body, headers);
  }

  /** The request limit as the vendors state theirs: whole requests per minute. */
  #requestsPerMinute(): number {
    return Math.floor(this.#requests.rate * 60 + PER_MINUTE_EPSILON);
  }

  /**
   * The vendor's rate-limit headers for the exchange's key, as they stand now unless a decision is
   * given: the limit per minute, what may be sent now before a 429 (the vendors' "remaining"), and
   * the time until that is back at its most. A key without a request limit states none.
   */
  #limitHeaders(exchange: Exchange, limits: LimitContext): Record<string, string> {
    const key = exchange.key!;
    const status: LimitSnapshot[] = [];
    if (this.#requests.rate !== Infinity) {
      const decision = limits.requests ?? this.#requests.take(key, 0);
      status.push({ kind: 'requests', limit: this.#requestsPerMinute(), remaining: decision.remaining, resetMs: decision.resetMs });
    }
    if (this.#tokens !== undefined) {
      const decision = limits.tokens ?? this.#tokens.take(key, 0);
      status.push({ kind: 'tokens', limit: decision.limit, remaining: decision.remaining, resetMs: decision.resetMs });
    }
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
      const { req, requestId } = exchange;
      const key = exchange.key ?? exchange.refusedKey;
      const fields = { method: req.method, path: req.url, status, ms: Math.round(seconds * 1e4) / 10, requestId };
      this.#logger.info(key === undefined ? fields : { ...fields, key: keyFingerprint(key) }, 'request');
    }
  }
}

/**
 * What the simulated provider is asked: the summary (free text, and JSON mode without a schema),
 * the request's schema under its name, or for JSON mode the schema its prompt gives — answered from
 * what the prompt says around it, not from the schema's own words.
 */
function taskOfAnswer(request: ChatRequest, answerSchema: JsonSchema): { task: string; prompt: string } {
  const { shape, lastUserText } = request;
  if (answerSchema === SUMMARY_SCHEMA) return { task: 'summarize', prompt: lastUserText };
  if (shape.kind === 'schema' || shape.kind === 'tool') return { task: shape.name, prompt: lastUserText };
  return { task: 'json_object', prompt: lastUserText.replace(/```[\s\S]*?```/g, '') };
}

/** An unfit answer as the draft sent: a tool's input must be an object, so text that is not JSON goes as text. */
function unfitDraft(answer: string, kind: ChatRequest['shape']['kind']): Draft {
  if (kind === 'text') return { text: answer };
  try {
    return { value: JSON.parse(answer) };
  } catch {
    return { text: answer };
  }
}

/** The API a request outside the chat routes speaks, by its headers: Anthropic's name their key and version. */
function apiOf(headers: IncomingHttpHeaders): ChatApi {
  return headers['x-api-key'] !== undefined || headers['anthropic-version'] !== undefined ? anthropicApi : openAiApi;
}

/** A request the API refused as it stands, or a schema it cannot answer, as the 400 that says so. */
function asRefusal(api: ChatApi, error: unknown): Refusal {
  if (error instanceof InvalidRequestError) {
    return new Refusal({ kind: 'invalid-request', message: error.message, param: error.param, code: error.code });
  }
  if (error instanceof SchemaError) {
    return new Refusal({ kind: 'invalid-request', param: api.schemaParam, message: `Invalid schema: ${error.message}` });
  }
  throw error;
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

/** Printable ASCII without spaces: what a header carries whole, as the vendors' keys are. */
const API_KEY = /^[\x21-\x7e]+$/;

/** The keys are secrets: what is wrong with them is said by type and length, never by the key. */
function checkApiKeys(apiKeys: unknown): void {
  if (!Array.isArray(apiKeys) || apiKeys.length === 0) {
    throw new TypeError(
      `Expected apiKeys to be a non-empty array of API keys, got ${Array.isArray(apiKeys) ? 'an empty one' : typeof apiKeys}`,
    );
  }
  apiKeys.forEach((key, index) => {
    if (typeof key !== 'string' || !API_KEY.test(key)) {
      const got = typeof key === 'string' ? `a string of ${key.length} characters` : typeof key;
      throw new TypeError(`Expected apiKeys[${index}] to be printable ASCII without spaces, got ${got}`);
    }
  });
}

function pickSimulation(simulation: LlmServerSimulation): LlmServerSimulation {
  const { minLatencyMs, maxLatencyMs, profile, seed, outage, hangMs } = simulation;
  const picked: Record<string, unknown> = { minLatencyMs, maxLatencyMs, profile, seed, outage, hangMs };
  for (const [name, value] of Object.entries(picked)) if (value === undefined) delete picked[name];
  return picked as LlmServerSimulation;
}
