import { systemClock, type Clock } from '../clock.ts';
import { readAnswer } from '../provider/answer.ts';
import { TimeoutError, type LlmRequest, type LlmResponse, type Provider, type TokenUsage } from '../provider/provider.ts';
import { sharedPart } from '../vendors/shared-part.ts';
import type { BatchApi, BatchProgress, BatchRow, RowOutcome, SubmittedBatch } from './batch-api.ts';

/** What answers the rows of a {@link SimulatedBatchApi}, and how long a batch takes. */
export interface SimulatedBatchApiOptions {
  /** Answers each row, as it answers a live call (its failures become errored rows). */
  readonly provider: Provider;
  /** How long a batch takes from its submission to its end, in ms. @default 1000 */
  readonly durationMs?: number | undefined;
  /** How long a row's answer may take before the row errors (a hanging call of the failure profile), in ms. @default 1000 */
  readonly rowTimeoutMs?: number | undefined;
  /** Time source of the batches' ends and the rows' timeouts. @default systemClock */
  readonly clock?: Clock | undefined;
}

interface HeldBatch {
  readonly rows: readonly BatchRow[];
  readonly endsAtMs: number;
  cancelled: boolean;
  outcomes?: Promise<RowOutcome[]>;
}

/**
 * What a row of a simulated batch carries: the prompt and the conversation after it, the schema
 * (one object a task, serialized once a batch) and the output cap — as much as a vendor's body
 * carries, so that a batch's bytes are sized as a real one's are.
 */
interface SimulatedRowBody {
  readonly task: string;
  readonly prompt: string;
  readonly messages?: LlmRequest['messages'];
  readonly schema: object;
  readonly maxOutputTokens: number;
}

/** What a simulated batch's row answered: the output as the model's JSON text, and the usage. */
interface SimulatedAnswerBody {
  readonly output: string;
  readonly usage?: TokenUsage | undefined;
}

/**
 * A Batch API in this process over a provider (the simulated one): a batch ends `durationMs` after
 * its submission, each row answered by the provider and carried as the model's JSON text, read back
 * — checked against its schema — as a real batch's answer is. Its batches live as long as the
 * object: nothing to resume.
 */
export class SimulatedBatchApi implements BatchApi {
  /** {@inheritDoc BatchApi.name} */
  readonly name: string;
  /** {@inheritDoc BatchApi.model} */
  readonly model: string | undefined;
  readonly #provider: Provider;
  readonly #durationMs: number;
  readonly #clock: Clock;
  readonly #rowTimeoutMs: number;
  readonly #batches = new Map<string, HeldBatch>();

  constructor(options: SimulatedBatchApiOptions) {
    this.#provider = options.provider;
    this.name = options.provider.name;
    this.model = options.provider.target?.model;
    this.#durationMs = options.durationMs ?? 1000;
    this.#clock = options.clock ?? systemClock;
    this.#rowTimeoutMs = options.rowTimeoutMs ?? 1000;
  }

  /** {@inheritDoc BatchApi.encode} */
  encode(request: LlmRequest, maxOutputTokens: number): object {
    const { task, prompt, messages, schema } = request;
    const body: SimulatedRowBody = { task, prompt, messages, schema: sharedPart(schema as object), maxOutputTokens };
    return body;
  }

  /** {@inheritDoc BatchApi.decode} (The output is not cut off: the provider answered whole.) */
  async decode(request: LlmRequest, body: object, _maxOutputTokens?: number): Promise<LlmResponse> {
    const { output, usage } = body as Partial<SimulatedAnswerBody>;
    return { output: await readAnswer(request, output, { usage }), usage };
  }

  /** {@inheritDoc BatchApi.submit} */
  async submit(rows: readonly BatchRow[]): Promise<SubmittedBatch> {
    const batchId = `batch_sim_${this.#batches.size + 1}`;
    this.#batches.set(batchId, { rows, endsAtMs: this.#clock.now() + this.#durationMs, cancelled: false });
    return { batchId };
  }

  /** {@inheritDoc BatchApi.poll} */
  async poll(batchId: string): Promise<BatchProgress> {
    const batch = this.#held(batchId);
    const ended = batch.cancelled || this.#clock.now() >= batch.endsAtMs;
    const total = batch.rows.length;
    if (!ended) return { status: 'in_progress', ended, total, completed: 0, failed: 0 };
    const outcomes = await this.results(batchId);
    const completed = outcomes.filter((outcome) => 'body' in outcome).length;
    return { status: batch.cancelled ? 'cancelled' : 'completed', ended, total, completed, failed: total - completed };
  }

  /** {@inheritDoc BatchApi.results} */
  results(batchId: string): Promise<RowOutcome[]> {
    const batch = this.#held(batchId);
    batch.outcomes ??= Promise.all(batch.rows.map((row) => (batch.cancelled ? expired(row) : this.#answer(row))));
    return batch.outcomes;
  }

  /** {@inheritDoc BatchApi.cancel} */
  async cancel(batchId: string): Promise<void> {
    const batch = this.#held(batchId);
    if (batch.outcomes === undefined) batch.cancelled = true;
  }

  #held(batchId: string): HeldBatch {
    const batch = this.#batches.get(batchId);
    if (batch === undefined) throw new Error(`no batch ${batchId}`);
    return batch;
  }

  async #answer(row: BatchRow): Promise<RowOutcome> {
    // A provider that never answers (the profile's hangs) makes an errored row, as a batch's would.
    const timeout = new AbortController();
    const cancelTimer = this.#clock.setTimer(this.#rowTimeoutMs, () =>
      timeout.abort(new TimeoutError(`no answer within ${this.#rowTimeoutMs} ms`)),
    );
    try {
      const { output, usage } = await this.#provider.call(row.request, { signal: timeout.signal });
      const body: SimulatedAnswerBody = { output: JSON.stringify(output), usage: usage ?? { inputTokens: 0, outputTokens: 0 } };
      return { customId: row.customId, body };
    } catch (error) {
      return { customId: row.customId, error: `${(error as Error).name}: ${(error as Error).message}` };
    } finally {
      cancelTimer();
    }
  }
}

const expired = async (row: BatchRow): Promise<RowOutcome> => ({ customId: row.customId, error: 'the batch was cancelled', expired: true });
