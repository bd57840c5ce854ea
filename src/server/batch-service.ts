import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { SimulatedProvider } from '../simulator/simulated.ts';
import type { RowAnswer } from '../vendors/serve/batch-job.ts';
import { type ChatAnswer, type ChatApi, type ChatRequest, isInvalidRequestError } from '../vendors/serve/chat-api.ts';
import type { BatchServices } from '../vendors/serve/dialect.ts';
import { isRefusal, Refusal } from '../vendors/serve/exchange.ts';
import { FileStore } from '../vendors/serve/file-store.ts';
import type { Draft } from './answer-choices.ts';
import type { LlmServerSimulation } from './llm-server-options.ts';
import { rowFailures } from './refusals.ts';
import type { Prepared } from './server-parts.ts';

/** The steps of the server's live chat routes a batch's rows go through. */
export interface RowSteps {
  /** Parses the body as the route does and makes the schema the answer is for; throws a {@link Refusal}. */
  prepare(api: ChatApi, body: unknown): Prepared;
  /** The answer's draft from `provider`, or its failure as a {@link Refusal}. */
  draft(provider: SimulatedProvider, api: ChatApi, prepared: Prepared, requestId: string): Promise<Draft>;
  /** The draft ended as a model's output ends, with its usage. */
  complete(request: ChatRequest, draft: Draft): ChatAnswer;
  /** The prompt's input tokens, as an answer's usage counts them; throws `InvalidRequestError` for a body the API refuses. */
  promptTokens(api: ChatApi, body: unknown): number;
  /** Told of background work on a batch that failed. */
  failed(error: unknown): void;
}

/** A server's batch settings. */
export interface BatchSettings {
  readonly simulation: LlmServerSimulation;
  readonly clock: Clock;
  readonly durationMs: number;
  readonly windowMs: number;
  readonly queueTokens: number | undefined;
  readonly maxBatchBytes: number;
}

/**
 * What the vendors' Batch APIs of one server run on: the files kept on disk, and the simulated
 * provider their rows are answered by — the live one's seed, no latency, and its rate limits and
 * hangs as the 5xx rows a batch has instead. Each vendor's dialect keeps its own batches over it.
 */
export class BatchService {
  readonly files = new FileStore();
  readonly maxBatchBytes: number;
  /** What a dialect's batches are made with. */
  readonly services: BatchServices;

  constructor(settings: BatchSettings, steps: RowSteps) {
    const { simulation, clock } = settings;
    const provider = new SimulatedProvider({
      seed: simulation.seed,
      profile: rowFailures(simulation.profile),
      minLatencyMs: 0,
      maxLatencyMs: 0,
      name: 'serve-batches',
      clock,
    });
    this.services = {
      files: this.files,
      timing: { clock, durationMs: settings.durationMs, windowMs: settings.windowMs },
      queueTokens: settings.queueTokens,
      answerRow: (api: ChatApi, body: unknown) => answerRow(steps, provider, api, body),
      inputTokens: (api: ChatApi, body: unknown) => inputTokens(steps, api, body),
      background: (work: Promise<void>) => {
        work.catch(steps.failed);
      },
    };
    this.maxBatchBytes = settings.maxBatchBytes;
  }
}

/**
 * A batch row answered as its route answers it live, without the latency or the quotas (a batch
 * has its own): parsed, made for its schema, ended as a model's output ends; a request the route
 * would refuse, or a failure of the simulation, is the row's error in the API's shape.
 */
async function answerRow(steps: RowSteps, provider: SimulatedProvider, api: ChatApi, body: unknown): Promise<RowAnswer> {
  const requestId = randomUUID().replaceAll('-', '');
  try {
    const prepared = steps.prepare(api, body);
    if (prepared.request.stream !== undefined) {
      throw new Refusal({ kind: 'invalid-request', message: 'Streaming is not supported in batches: leave stream out.', param: 'stream' });
    }
    const draft = await steps.draft(provider, api, prepared, requestId);
    const answer = steps.complete(prepared.request, draft);
    return { statusCode: 200, requestId: `req_${requestId}`, body: api.respond(prepared.request, answer, requestId) };
  } catch (error) {
    if (!isRefusal(error)) throw error;
    const { status, body: failure } = api.fail(error.failure, `req_${requestId}`);
    return { statusCode: status, requestId: `req_${requestId}`, body: failure };
  }
}

/** The input tokens of a request with this body, as its answer's usage would count them; 0 for one the API refuses. */
function inputTokens(steps: RowSteps, api: ChatApi, body: unknown): number {
  try {
    return steps.promptTokens(api, body);
  } catch (error) {
    if (isInvalidRequestError(error)) return 0;
    throw error;
  }
}
