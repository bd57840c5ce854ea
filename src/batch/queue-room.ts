/** A batch refused for the queue: its estimated tokens, the run's before it (undefined: not known), its id once it had one. */
export interface QueuedAt {
  readonly tokens: number;
  readonly enqueued: number | undefined;
  readonly batchId?: string | undefined;
}

/**
 * The provider's queue as a batch run counts it. The provider counts a batch's tokens its own way,
 * which is not the run's to know, but a refusal proves something of it: refused with `E` of the
 * run's estimated tokens enqueued (the batch and those before it in the queue) against a limit `L`,
 * the provider counts more than `L / E` of its tokens for each of ours. From then on the run counts
 * each of its tokens as `2·L / E` of the provider's — the next batch half what the queue refused,
 * which, once taken, the provider has shown to fit — and does not submit into a queue that has just
 * refused until a batch of the run's in it ends: one batch goes, then none until one ends.
 */
export class QueueRoom {
  readonly #limit: number | undefined;
  /** The provider's tokens counted for each of the run's estimated tokens. */
  #scale = 1;
  /** A batch was refused since one of the run's last ended. */
  #refused = false;
  /** The run's estimated tokens in the queue before each batch in flight was submitted. */
  readonly #before = new Map<string, number>();

  /** `limit`: the queue's tokens (`queueTokens`), or undefined when they are not counted. */
  constructor(limit: number | undefined) {
    this.#limit = limit;
  }

  /** The provider's tokens counted for each of the run's estimated tokens, as refusals have taught it (1 before any). */
  get scale(): number {
    return this.#scale;
  }

  /** A batch was refused since one of the run's last ended: one batch goes, then none until one ends. */
  get refusedLately(): boolean {
    return this.#refused;
  }

  /** The estimated tokens the next batch may hold with `enqueued` of the run's in the queue. */
  room(enqueued: number): number {
    return this.#limit === undefined ? Infinity : Math.floor(this.#limit / this.#scale) - enqueued;
  }

  /** Batch `batchId` went with `enqueued` estimated tokens of the run's before it in the queue. */
  submitted(batchId: string, enqueued: number): void {
    if (this.#limit !== undefined) this.#before.set(batchId, enqueued);
  }

  /**
   * A batch of `tokens` estimated tokens was refused for the queue, with `enqueued` of the run's
   * before it (undefined: not known, as for a batch a resumed run found in flight). Returns whether
   * it taught the queue's room anything (not without the queue's tokens, or the batch's).
   */
  refused({ tokens, enqueued, batchId }: QueuedAt): boolean {
    this.#refused = true;
    if (batchId !== undefined) this.#before.delete(batchId);
    if (this.#limit === undefined || enqueued === undefined || tokens + enqueued <= 0) return false;
    this.#scale = Math.max(this.#scale, (2 * this.#limit) / (tokens + enqueued));
    return true;
  }

  /** The estimated tokens of the run's in the queue when `batchId` was submitted, if known. */
  before(batchId: string): number | undefined {
    return this.#before.get(batchId);
  }

  /** A batch of the run's ended (not refused): the queue has room again. */
  ended(batchId: string): void {
    this.#before.delete(batchId);
    this.#refused = false;
  }
}
