/**
 * The simulated provider as an HTTP server speaking the vendors' APIs — each vendor's dialect,
 * from its folder, mounted over the steps every route shares — with a quota per API key: an
 * offline stand-in for a real provider, for this pipeline and for anyone's code written against
 * the official SDKs or the frameworks built on them.
 */

import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { RateLimitDecision } from '../limiter/keyed-limiter.ts';
import { BadRequestError, isMalformedOutputError } from '../provider/provider.ts';
import { OUTAGE_PROFILE_WINDOW, SimulatedProvider, type OutageWindow } from '../simulator/simulated.ts';
import { checkInteger, checkObject, checkString } from '../validation/checks.ts';
import { answerChoice, unfitDraft, type Draft } from './answer-choices.ts';
import {
  isInvalidRequestError,
  type ChatAnswer,
  type ChatApi,
  type ChatRequest,
  type Failure,
  type ParseOptions,
} from '../vendors/serve/chat-api.ts';
import { readBody } from './request-body.ts';
import { ResponseStore } from './response-store.ts';
import { SchemaError } from '../provider/schema-validators.ts';
import { keyFingerprint } from './server-metrics.ts';
import { StreamFaults } from './stream-faults.ts';
import { writeStream } from './stream-writer.ts';
import { ClientGone, isRefusal, Refusal, type Exchange, type LimitContext } from '../vendors/serve/exchange.ts';
import { LLM_SERVER_DEFAULTS, serverSettings, type ListenOptions, type LlmServerOptions } from './llm-server-options.ts';
import { RouteTable, SERVER_ROUTES, type ServerStep } from './routes.ts';
import { promptedSchema, schemaToAnswer, SUMMARY_SCHEMA, taskOfAnswer } from './answer-schema.ts';
import type { StoredFile } from '../vendors/serve/file-store.ts';
import { FileAnswer, type ServeHost } from '../vendors/serve/dialect.ts';
import { loadDialects } from './dialects.ts';
import { BatchService } from './batch-service.ts';
import { KeyQuotas } from './key-quotas.ts';
import { PromptCache } from './prompt-cache.ts';
import { loadServerParts, type Loaded, type Prepared } from './server-parts.ts';
import { asRefusal, simulatedFailure } from './refusals.ts';
import { listeningUrl } from './listening-url.ts';

export { LLM_SERVER_DEFAULTS, type ListenOptions, type LlmServerOptions, type LlmServerSimulation } from './llm-server-options.ts';

/** nginx's status for a client that closed the connection before the answer. */
const CLIENT_CLOSED = 499;

/**
 * An HTTP server that answers each registered vendor's routes as its dialect words them — OpenAI's
 * `POST /v1/chat/completions` and `POST /v1/responses`, Anthropic's `POST /v1/messages` (each whole
 * or streamed), their Batch APIs, … — with the simulated provider's answers, plus `GET
 * /v1/models[/{id}]`, `GET /healthz` and `GET /metrics` (Prometheus). Every chat request goes
 * through the same steps:
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
  /** Each API key's quotas: requests, and tokens with a token limit. */
  readonly #quotas: KeyQuotas;
  readonly #provider: SimulatedProvider;
  /** What the vendors' Batch APIs run on: their files, and the provider their rows are answered by. */
  readonly #batches: BatchService;
  /** What the dialects' handlers are lent. */
  readonly #host: ServeHost;
  /** The dialects' routes and the server's own, once loaded. */
  #routes: RouteTable | undefined;
  readonly #outage: OutageWindow | undefined;
  readonly #promptCache: PromptCache;
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
  /** The host dialect the OpenAI-compatible routes imitate, if any. */
  readonly #headers: string | undefined;
  #loaded: Loaded | undefined;
  #inFlight = 0;
  #closing: Promise<void> | undefined;

  constructor(options: LlmServerOptions = {}) {
    const settings = serverSettings(options);
    const { clock, simulation } = settings;
    this.#clock = clock;
    this.#headers = settings.headers;
    this.#quotas = new KeyQuotas({
      rate: settings.rate,
      burst: settings.burst,
      tokensPerMinute: settings.tokensPerMinute,
      clock,
      maxKeys: settings.maxKeys,
    });
    // One provider for all: call n's fate depends on the seed and n, in arrival order, as in-process.
    this.#provider = new SimulatedProvider({ ...simulation, name: 'serve', clock });
    this.#outage = simulation.outage ?? (simulation.profile === 'outage' ? OUTAGE_PROFILE_WINDOW : undefined);
    this.#promptCache = new PromptCache(settings.promptCacheTtlMs, clock);
    this.#batches = new BatchService(
      {
        simulation,
        clock,
        durationMs: settings.batchDurationMs,
        windowMs: settings.batchWindowMs,
        queueTokens: settings.batchQueueTokens,
        maxBatchBytes: settings.maxBatchBytes,
      },
      {
        prepare: (api, body) => this.#prepare(api, undefined, body),
        draft: (provider, api, prepared, requestId) => this.#draft(provider, api, prepared, requestId),
        complete: (request, draft) => this.#complete(request, draft),
        promptTokens: (api, body) => this.#loaded!.tokenizer.encode(api.parse(body, this.#parseOptions).promptText).length,
        failed: (error) => {
          // Closing removes the batches' files from under the work on them: that is no error.
          if (this.#closing === undefined) this.#logger.error({ err: error }, 'batch work failed');
        },
      },
    );
    this.#createdAtMs = clock.now();
    this.#tokensPerSecond = settings.tokensPerSecond;
    this.#faults = new StreamFaults(settings.failMidStream, simulation.seed ?? 1);
    this.#parseOptions = { lenientSchemas: settings.lenientSchemas };
    this.#maxBodyBytes = settings.maxBodyBytes;
    this.#models = Object.freeze([...settings.models]);
    this.#apiKeys = settings.apiKeys === undefined ? undefined : new Set(settings.apiKeys);
    this.#maxKeyLabels = settings.maxKeyLabels;
    this.#logger = settings.logger;
    this.#host = {
      keyed: (exchange, options, work) => this.#keyed(exchange, options, work),
      readBody: (exchange, maxBytes) => this.#readBody(exchange, maxBytes),
      readJson: (exchange, maxBytes) => this.#readJson(exchange, maxBytes),
      maxBodyBytes: this.#maxBodyBytes,
      maxBatchBytes: this.#batches.maxBatchBytes,
      countTokens: (text) => this.#loaded!.tokenizer.encode(text).length,
      keptAnswer: (key, id) => this.#responses.find(key, id)?.body,
      batches: this.#batches.services,
    };
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
    return listeningUrl(this.#server);
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
    }).finally(() => this.#batches.files.close());
    return this.#closing;
  }

  /** The registry's dialects mounted on this server, then what answering needs (ajv, prom-client, the tokenizer). */
  async #load(): Promise<Loaded> {
    const dialects = await loadDialects(this.#headers);
    const mounted = dialects.map(({ type, dialect }) => ({ type, mounted: dialect.mount(this.#host) }));
    this.#routes = new RouteTable(
      [...mounted.flatMap(({ mounted }) => mounted.routes), ...SERVER_ROUTES],
      dialects.map(({ dialect }) => dialect),
    );
    const batched = mounted.filter(({ mounted }) => mounted.batchCounts !== undefined);
    return loadServerParts(
      this.#maxKeyLabels,
      (key) => ({ requests: this.#quotas.requests.take(key, 0).remaining, tokens: this.#quotas.tokens?.take(key, 0).remaining }),
      () => Object.fromEntries(batched.map(({ type, mounted }) => [type, mounted.batchCounts!()])),
      batched.map(({ type, mounted }) => ({ label: type, name: mounted.batchApiName ?? type })),
    );
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { spec, id, api, label } = this.#routes!.match(req.method, req.url, req.headers);
    const exchange: Exchange = {
      req,
      res,
      api,
      route: label,
      requestId: randomUUID().replaceAll('-', ''),
      startedMs: performance.now(),
      key: undefined,
      refusedKey: undefined,
    };
    this.#inFlight++;
    try {
      if (spec === undefined) {
        exchange.key = exchange.api.keyOf(req.headers);
        const path = (req.url ?? '/').split('?', 1)[0]!;
        return this.#fail(exchange, { kind: 'not-found', message: `Invalid URL (${req.method} ${path})` });
      }
      const handle = spec.handle;
      if (typeof handle === 'function') return await handle(exchange, id);
      return await (handle === 'chat' ? this.#chat(exchange, id) : this.#steps[handle](exchange, id));
    } catch (error) {
      this.#logger.error({ err: error, requestId: exchange.requestId }, 'request failed');
      if (res.headersSent) res.destroy();
      else this.#fail(exchange, { kind: 'server-error', message: 'The server had an error while answering the request.' });
    } finally {
      this.#inFlight--;
    }
  }

  /** What the server's own routes run (see `SERVER_ROUTES`). */
  readonly #steps: Readonly<Record<ServerStep, (exchange: Exchange, id: string) => void | Promise<void>>> = {
    models: (exchange) => this.#answerKeyed(exchange, () => exchange.api.models(this.#models)),
    model: (exchange, id) => this.#answerKeyed(exchange, () => exchange.api.model(id)),
    health: (exchange) => this.#send(exchange, 200, { status: 'ok' }),
    metrics: (exchange) => this.#scrape(exchange),
  };

  /**
   * A dialect's route that needs a key (see `ServeHost.keyed`): with `maxBodyBytes`, 413 by the
   * declared length; with `admit`, a request from the key's quota. `work` answers with a body, or a
   * kept file to stream; a request its API refuses as it stands is the 400 in its words.
   */
  async #keyed(
    exchange: Exchange,
    { admit = false, maxBodyBytes }: { readonly admit?: boolean; readonly maxBodyBytes?: number },
    work: (key: string) => unknown,
  ): Promise<void> {
    try {
      this.#authenticate(exchange);
      if (maxBodyBytes !== undefined && Number(exchange.req.headers['content-length']) > maxBodyBytes) throw this.#tooLarge(maxBodyBytes);
      if (admit) this.#quotas.admit(exchange.key!);
      let answer: unknown;
      try {
        answer = await work(exchange.key!);
      } catch (error) {
        throw isInvalidRequestError(error) ? asRefusal(exchange.api, error) : error;
      }
      if (answer instanceof FileAnswer) await this.#sendFile(exchange, answer.file, answer.type);
      else this.#send(exchange, 200, answer, this.#quotas.headers(exchange, {}));
    } catch (error) {
      this.#answerStop(exchange, error);
    }
  }

  /** A kept file, streamed from disk. */
  async #sendFile(exchange: Exchange, file: StoredFile, type: string): Promise<void> {
    const { res, api } = exchange;
    res.writeHead(200, {
      'content-type': type,
      'content-length': String(file.bytes),
      [api.requestIdHeader]: `req_${exchange.requestId}`,
      ...this.#quotas.headers(exchange, {}),
      ...this.#connection(),
    });
    try {
      await pipeline(this.#batches.files.read(file), res);
    } catch {
      // The client went away mid-file: there is nobody left to answer.
      return this.#finish(exchange, CLIENT_CLOSED);
    }
    this.#finish(exchange, 200);
  }

  /**
   * The story of a chat request, the same on every chat route: each step says what it does and
   * returns what the next needs, or throws a {@link Refusal} (answered in the route's API shape) or
   * {@link ClientGone}. What differs per route — parsing, the answer's shape, its stream, errors —
   * is the `ChatApi`'s.
   */
  async #chat(exchange: Exchange, routeId: string): Promise<void> {
    try {
      this.#authenticate(exchange);
      this.#refuseDeclaredOversize(exchange);
      await this.#quotas.admitChat(exchange);
      const body = await this.#readJson(exchange);
      const prepared = this.#prepare(exchange.api, exchange.key, body, routeId);
      const draft = await this.#generate(exchange, prepared);
      const answer = this.#promptCache.apply(
        exchange.key!,
        prepared.request,
        this.#complete(prepared.request, draft),
        this.#loaded!.tokenizer,
      );
      const tokens = this.#quotas.chargeTokens(exchange.key!, answer.inputTokens + answer.outputTokens, exchange.api.overQuota);
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

  /** The body, read up to the cap: 413 past it. */
  async #readBody(exchange: Exchange, maxBytes: number): Promise<Buffer> {
    const { req, res } = exchange;
    // Only now that the request is admitted is the client told to send its body.
    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    const body = await readBody(req, maxBytes);
    if (body === 'too-large') throw this.#tooLarge(maxBytes);
    if (body === 'gone') throw new ClientGone();
    return body;
  }

  /** The body, read up to the cap and parsed as JSON: 413 past the cap, 400 for what does not parse. */
  async #readJson(exchange: Exchange, maxBytes = this.#maxBodyBytes): Promise<unknown> {
    const body = await this.#readBody(exchange, maxBytes);
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
  #prepare(api: ChatApi, key: string | undefined, body: unknown, routeId?: string): Prepared {
    try {
      // A batch row (no key here) continues no earlier response: a batch is no conversation.
      const previousResponse = key === undefined ? undefined : (id: string) => this.#responses.find(key, id);
      const request = api.parse(body, { ...this.#parseOptions, previousResponse, routeId });
      const { shape } = request;
      if (shape.kind === 'text') return { request, answerSchema: SUMMARY_SCHEMA };
      if (shape.kind === 'json-object') return { request, answerSchema: promptedSchema(this.#loaded!.schemas, request) ?? SUMMARY_SCHEMA };
      return { request, answerSchema: schemaToAnswer(this.#loaded!.schemas, shape.name, shape.schema) };
    } catch (error) {
      throw asRefusal(api, error);
    }
  }

  /**
   * The answer after the simulated provider's latency (a stream's first token), or its failure: the
   * provider answers as it answers in process — the built-in tasks (and free text, its summary) from
   * its own analysis of the article, any other schema with a value made to fit. A client that goes
   * away meanwhile ends the wait.
   */
  async #generate(exchange: Exchange, prepared: Prepared): Promise<Draft> {
    const { res, api } = exchange;
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableEnded) abort.abort(new Error('the client closed the connection'));
    };
    res.once('close', onClose);
    try {
      return await this.#draft(this.#provider, api, prepared, exchange.requestId, abort.signal);
    } catch (error) {
      if (abort.signal.aborted) throw new ClientGone();
      throw error;
    } finally {
      res.off('close', onClose);
    }
  }

  /** What `provider` answers the prepared request, or the {@link Refusal} its failure is. */
  async #draft(
    provider: SimulatedProvider,
    api: ChatApi,
    { request, answerSchema }: Prepared,
    id: string,
    signal?: AbortSignal,
  ): Promise<Draft> {
    try {
      const { output } = await provider.call(
        {
          ...taskOfAnswer(request, answerSchema),
          articleId: id,
          schema: answerSchema,
          // A conversation the model has spoken in (a repair) is answered fit, as the provider answers it in process.
          ...(request.answered === true && { messages: [{ role: 'user' as const, content: request.lastUserText }] }),
        },
        { signal },
      );
      return request.shape.kind === 'text' ? { text: String(output.summary) } : { value: output };
    } catch (error) {
      if (signal?.aborted) throw error;
      // The profile's unfit answer is sent as a model sends one: a 200 the client finds unfit.
      if (isMalformedOutputError(error) && error.answer !== undefined) return unfitDraft(error.answer, request.shape.kind);
      // Only a task-shaped schema that asks more than the task's answer, and admits nothing, gets here.
      if (error instanceof BadRequestError && error.cause instanceof SchemaError) throw asRefusal(api, error.cause);
      const failure = simulatedFailure(error);
      if (failure !== undefined) throw new Refusal(failure, { retryAfterMs: (error as { retryAfterMs?: number }).retryAfterMs });
      throw error;
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
      this.#send(exchange, 200, api.respond(request, answer, requestId), this.#quotas.headers(exchange, { tokens }));
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
      ...this.#quotas.headers(exchange, { tokens }),
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
    if (isRefusal(error)) this.#fail(exchange, error.failure, error.limits);
    else if (error instanceof ClientGone) this.#finish(exchange, CLIENT_CLOSED);
    else throw error;
  }

  /** A read-only route that needs a key and takes nothing from its quota. */
  #answerKeyed(exchange: Exchange, body: () => unknown): void {
    try {
      this.#authenticate(exchange);
      this.#send(exchange, 200, body(), this.#quotas.headers(exchange, {}));
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

  #tooLarge(maxBytes = this.#maxBodyBytes): Refusal {
    const message = `Request body too large: the limit is ${maxBytes} bytes.`;
    // The rest of the body is not read: the connection closes once the answer is out.
    return new Refusal({ kind: 'too-large', message, code: 'request_too_large' }, { close: true });
  }

  #inOutage(): boolean {
    const elapsedMs = this.#clock.now() - this.#createdAtMs;
    return this.#outage !== undefined && elapsedMs >= this.#outage.startMs && elapsedMs < this.#outage.endMs;
  }

  #fail(exchange: Exchange, failure: Failure, limits: LimitContext = {}): void {
    const wait = limits.retryAfterMs !== undefined && Number.isFinite(limits.retryAfterMs) ? limits.retryAfterMs : undefined;
    const { status, body } = exchange.api.fail(failure, `req_${exchange.requestId}`, wait);
    const headers = exchange.key === undefined ? {} : this.#quotas.headers(exchange, limits);
    // A limit that can never be met (a request bigger than the bucket) is not worth retrying.
    if (failure.kind === 'rate-limited' && limits.retryAfterMs === Infinity) headers['x-should-retry'] = 'false';
    if (limits.close === true) headers.connection = 'close';
    this.#send(exchange, status, body, headers);
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
