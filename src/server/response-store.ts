/**
 * What the Responses API answered, kept so that `GET /v1/responses/{id}` can give it back and a
 * later request can continue it (`previous_response_id`): per API key — a key never sees another's
 * responses — the most recent `maxResponses` of them, the oldest dropped first.
 */
export class ResponseStore {
  readonly #maxResponses: number;
  readonly #kept = new Map<string, KeptResponse>();

  constructor(maxResponses: number) {
    this.#maxResponses = maxResponses;
  }

  keep(key: string, id: string, response: KeptResponse): void {
    if (this.#maxResponses === 0) return;
    const at = `${key}\n${id}`;
    this.#kept.delete(at);
    if (this.#kept.size >= this.#maxResponses) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(at, response);
  }

  find(key: string, id: string): KeptResponse | undefined {
    return this.#kept.get(`${key}\n${id}`);
  }
}

export interface KeptResponse {
  /** The response body, as it was sent (or, streamed, as its last event carried it). */
  readonly body: unknown;
  /** The conversation up to and including the answer: what a request continuing it is prompted with. */
  readonly promptText: string;
}
