/** One server-sent event as a test reads it: its name (when the API names its events) and its data, parsed unless it is `[DONE]`. */
export interface SseEvent {
  readonly event: string | undefined;
  readonly data: any;
}

/** The events in an SSE text (complete events only; a trailing partial one is left out). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split('\n\n').slice(0, -1)) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    const joined = data.join('\n');
    events.push({ event, data: joined === '[DONE]' ? joined : JSON.parse(joined) });
  }
  return events;
}

export interface StreamResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Every event, once the stream has ended (or been cut: then `cut` says so). */
  readonly events: SseEvent[];
  /** The stream ended without its terminating chunk: the connection was dropped. */
  readonly cut: boolean;
}

/** POSTs a streaming request and reads the stream to its end. */
export async function postStream(url: string, body: unknown, headers: Record<string, string>): Promise<StreamResponse> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  let text = '';
  let cut = false;
  try {
    text = await response.text();
  } catch {
    cut = true;
  }
  return { status: response.status, headers: Object.fromEntries(response.headers), events: cut ? [] : parseSse(text), cut };
}

/** A stream read as it arrives: what has come so far, and the chance to wait for more. */
export class StreamReader {
  #text = '';
  #done = false;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #pending: Promise<void> | undefined;

  constructor(readonly response: Response) {
    this.#reader = response.body!.getReader();
  }

  get events(): SseEvent[] {
    return parseSse(this.#text);
  }

  get done(): boolean {
    return this.#done;
  }

  /** Reads until `predicate` holds for the events so far, or the stream ends. */
  async until(predicate: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
    while (!predicate(this.events) && !this.#done) await this.#readOnce();
    return this.events;
  }

  /** Reads what arrives within `ms` of real time, and no more. */
  async settle(ms: number): Promise<SseEvent[]> {
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, ms));
    for (;;) {
      const next = this.#readOnce().then(() => 'read' as const);
      if ((await Promise.race([next, deadline.then(() => 'late' as const)])) === 'late' || this.#done) break;
    }
    return this.events;
  }

  cancel(): Promise<void> {
    return this.#reader.cancel();
  }

  #readOnce(): Promise<void> {
    this.#pending ??= this.#reader.read().then(
      ({ value, done }) => {
        this.#pending = undefined;
        if (done) this.#done = true;
        else this.#text += this.#decoder.decode(value, { stream: true });
      },
      () => {
        this.#pending = undefined;
        this.#done = true;
      },
    );
    return this.#pending;
  }
}
