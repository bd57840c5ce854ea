import { createRandom } from '../simulator/random.ts';
import type { StreamEvent } from '../vendors/serve/chat-api.ts';

/**
 * The mid-stream fault (`failMidStream`): a share of streams whose connection drops after some of
 * their tokens, so a client's resume and retry paths can be tested. Seeded apart from the
 * provider's draws, so turning it on leaves every request's latency and fate as they were; the n-th
 * stream's fate depends on the seed and n alone.
 */
export class StreamFaults {
  readonly #probability: number;
  readonly #random: () => number;

  constructor(probability: number, seed: number) {
    this.#probability = probability;
    // A fixed offset: the same seed, another sequence than the provider's.
    this.#random = createRandom((seed ^ 0x5f3759df) | 0);
  }

  /** The index of the event after which the connection drops — one that carries tokens — or undefined for a stream that completes. */
  dropAfter(events: readonly StreamEvent[]): number | undefined {
    if (this.#probability === 0) return undefined;
    const fate = this.#random();
    const where = this.#random();
    if (fate >= this.#probability) return undefined;
    const carrying = events.flatMap((event, index) => (event.tokens > 0 ? [index] : []));
    if (carrying.length === 0) return 0;
    return carrying[Math.min(carrying.length - 1, Math.floor(where * carrying.length))];
  }
}
