import type { Anthropic } from '@anthropic-ai/sdk';
import {
  failureOf,
  headersOf,
  httpProviderSettings,
  loaded,
  outputOf,
  sdkClientOptions,
  sdkRequestOptions,
  usageOf,
  type ErrorBody,
  type HttpProviderOptions,
  type HttpProviderSettings,
  type SdkErrorClasses,
} from './http-api.ts';
import {
  DEFAULT_MAX_OUTPUT_TOKENS,
  MalformedOutputError,
  RefusalError,
  TruncatedOutputError,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
  type Provider,
} from './provider.ts';
import { TASK_DEFINITIONS, promptOf } from './tasks/answer.ts';

/** What an Anthropic provider is unless told otherwise. */
export const ANTHROPIC_DEFAULTS = Object.freeze({
  name: 'anthropic',
  /** Where the API is: the host root, as the SDK takes it (it adds `/v1/messages`). */
  baseUrl: 'https://api.anthropic.com',
  /** A small, fast model that uses tools. */
  model: 'claude-haiku-4-5',
  /** The environment variable the command line and the providers file read the key from. */
  apiKeyEnv: 'ANTHROPIC_API_KEY',
});

/** Stop reasons that mean the answer ran out of room before it was whole. */
const CUT_OFF: ReadonlySet<unknown> = new Set(['max_tokens', 'model_context_window_exceeded']);

/**
 * A provider over the Anthropic Messages API (`POST {baseUrl}/v1/messages`) through the official
 * `@anthropic-ai/sdk` — its own retries off, so that the call gate's limiter, breaker and retries
 * see every attempt.
 *
 * Each task is one tool the model is made to use (`tool_choice: { type: "tool" }`), whose input
 * schema is the task's; the call's max tokens go as `max_tokens`, which Anthropic counts against
 * output-token limits up front. The answer is read only when the model stopped to use the tool:
 * `max_tokens` is a `TruncatedOutputError`, `refusal` a `RefusalError`, and the tool's input is
 * checked against the schema again. Response headers (rate-limit status, retry-after) come back on
 * the response and on every error; 529 overloaded is a server error like a 503.
 *
 * The SDK and the answers' validators are loaded when the provider is made, not when the library
 * is imported; `ready()` says when they are (the pipeline waits for it before its first call).
 */
export class AnthropicProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly baseUrl: string;
  readonly #settings: HttpProviderSettings;
  readonly #sdk: Promise<{ client: Anthropic; errors: SdkErrorClasses }>;
  readonly #ready: Promise<void>;

  constructor(options: HttpProviderOptions) {
    this.#settings = httpProviderSettings(options, ANTHROPIC_DEFAULTS);
    ({ name: this.name, model: this.model, baseUrl: this.baseUrl } = this.#settings);
    this.#sdk = import('@anthropic-ai/sdk').then((sdk) => ({
      // No webhook key: the SDK would otherwise look for one in the environment.
      client: new sdk.Anthropic({ ...sdkClientOptions(this.#settings), webhookKey: null }),
      errors: sdk,
    }));
    // Loading starts now, so the first call does not pay for it; a failure to load is that call's to report.
    this.#sdk.catch(() => {});
    this.#ready = loaded(this.#sdk);
  }

  /** Resolves once the SDK and the answers' validators are loaded (never rejects). */
  ready(): Promise<void> {
    return this.#ready;
  }

  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    const { client, errors } = await this.#sdk;
    const task = TASK_DEFINITIONS[request.task];
    const body = {
      model: this.model,
      max_tokens: options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
      messages: [{ role: 'user' as const, content: promptOf(request) }],
      tools: [{ name: task.name, description: task.description, input_schema: task.schema as Anthropic.Tool.InputSchema }],
      tool_choice: { type: 'tool' as const, name: task.name },
    };
    const { data, response } = await client.messages
      .create(body, sdkRequestOptions(options))
      .withResponse()
      .catch((error: unknown) => {
        throw failureOf(error, { errors, readBody: anthropicErrorBody, apiKey: this.#settings.apiKey, call: options });
      });

    const headers = headersOf(response.headers);
    // No status on these: the request succeeded, its answer did not.
    const meta = { headers };
    // A server that is only nearly compatible may send any JSON: nothing below trusts the shape.
    const message = data as Partial<Anthropic.Message> | null;
    const stopReason = message?.stop_reason;
    if (CUT_OFF.has(stopReason)) throw new TruncatedOutputError(`the answer was cut off (${stopReason})`, meta);
    if (stopReason === 'refusal') throw new RefusalError('the model refused to answer', meta);
    const content: unknown[] = Array.isArray(message?.content) ? message.content : [];
    const use = content.find(
      (block): block is Anthropic.ToolUseBlock =>
        (block as Partial<Anthropic.ToolUseBlock> | null)?.type === 'tool_use' && (block as Anthropic.ToolUseBlock).name === task.name,
    );
    if (use === undefined)
      throw new MalformedOutputError(`the answer did not use the ${task.name} tool (stop reason ${String(stopReason)})`, meta);
    return {
      output: await outputOf(task, use.input, headers),
      usage: usageOf(message?.usage?.input_tokens, message?.usage?.output_tokens),
      headers,
    };
  }
}

/** Anthropic's error body: `{ type: "error", error: { type, message } }` (the SDK hands over all of it). */
function anthropicErrorBody(body: unknown): ErrorBody {
  const { type, message } = ((body as { error?: unknown } | null)?.error ?? {}) as Record<string, unknown>;
  return { codes: [type], message };
}
