import type { Anthropic } from '@anthropic-ai/sdk';
import {
  apiBodyOf,
  headersOf,
  sdkClientOptions,
  sdkRequestOptions,
  usageOf,
  WARM_UP_ANSWER,
  WARM_UP_REQUEST,
  type ErrorBody,
  type Sdk,
  type SdkWire,
  type SendContext,
} from './http-api.ts';
import {
  DEFAULT_MAX_OUTPUT_TOKENS,
  MalformedOutputError,
  RefusalError,
  TruncatedOutputError,
  type CallOptions,
  type LlmRequest,
  type LlmResponse,
} from './provider.ts';
import { readAnswer } from './answer.ts';
import { loadOptional } from '../optional-package.ts';
import { ANTHROPIC_DEFAULTS } from './vendor-defaults.ts';

/** Stop reasons that mean the answer ran out of room before it was whole. */
const CUT_OFF: ReadonlySet<unknown> = new Set(['max_tokens', 'model_context_window_exceeded']);

/**
 * The Anthropic Messages API (`POST {baseUrl}/v1/messages`) as `AnthropicProvider` speaks it.
 *
 * A provider over the Anthropic Messages API (`POST {baseUrl}/v1/messages`) through the official
 * `@anthropic-ai/sdk` — its own retries off, so that the call gate's limiter, breaker and retries
 * see every attempt.
 *
 * Each task is one tool the model is made to use (`tool_choice: { type: "tool" }`), named after the
 * task, whose input schema is the task's; the call's max tokens go as `max_tokens`, which Anthropic counts against
 * output-token limits up front. The answer is read only when the model stopped to use the tool:
 * `max_tokens` is a `TruncatedOutputError`, `refusal` a `RefusalError`, and the tool's input is
 * checked against the schema again. Response headers (rate-limit status, retry-after) come back on
 * the response and on every error; 529 overloaded is a server error like a 503.
 *
 * The SDK is loaded when the provider is made, not when the library is imported; `ready()` also
 * runs a call through it to a canned answer, sending nothing.
 */
export const ANTHROPIC_WIRE: SdkWire<Anthropic> = {
  defaults: ANTHROPIC_DEFAULTS,

  load: async (settings) => {
    const sdk = await loadOptional('@anthropic-ai/sdk', 'the Anthropic provider', () => import('@anthropic-ai/sdk'));
    // No webhook key: the SDK would otherwise look for one in the environment.
    return { client: new sdk.Anthropic({ ...sdkClientOptions(settings), webhookKey: null }), errors: sdk };
  },

  async send({ client, errors }: Sdk<Anthropic>, request: LlmRequest, options: CallOptions, context: SendContext): Promise<LlmResponse> {
    const tool = request.task;
    const body = {
      model: context.model,
      max_tokens: options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
      messages: [{ role: 'user' as const, content: request.prompt }],
      tools: [{ name: tool, description: request.description, input_schema: request.schema as Anthropic.Tool.InputSchema }],
      tool_choice: { type: 'tool' as const, name: tool },
    };
    const { data, response } = await client.messages
      .create(body, sdkRequestOptions(options))
      .withResponse()
      .catch((error: unknown) => {
        throw context.failure(error, errors, options);
      });

    const headers = headersOf(response.headers);
    // A server that is only nearly compatible may send any JSON: nothing below trusts the shape.
    const message = apiBodyOf(data, response, { headers }) as Partial<Anthropic.Message>;
    const usage = usageOf(message?.usage?.input_tokens, message?.usage?.output_tokens);
    // No status on these: the request succeeded, its answer did not (and cost what it used).
    const meta = { headers, usage };
    const stopReason = message?.stop_reason;
    if (CUT_OFF.has(stopReason))
      throw new TruncatedOutputError(`the answer was cut off (${stopReason}; max_tokens ${body.max_tokens})`, meta);
    if (stopReason === 'refusal') throw new RefusalError('the model refused to answer', meta);
    const content: unknown[] = Array.isArray(message?.content) ? message.content : [];
    const use = content.find(
      (block): block is Anthropic.ToolUseBlock =>
        (block as Partial<Anthropic.ToolUseBlock> | null)?.type === 'tool_use' && (block as Anthropic.ToolUseBlock).name === tool,
    );
    if (use === undefined)
      throw new MalformedOutputError(`the answer did not use the ${tool} tool (stop reason ${String(stopReason)})`, meta);
    return { output: await readAnswer(request, use.input, meta), usage, headers };
  },

  /** A message answering the warm-up call, its tool used: the fields the SDK and `send` read. */
  cannedAnswer(): Record<string, unknown> {
    return {
      id: 'warm-up',
      type: 'message',
      role: 'assistant',
      model: 'warm-up',
      content: [{ type: 'tool_use', id: 'warm-up', name: WARM_UP_REQUEST.task, input: WARM_UP_ANSWER }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
  },

  /** Anthropic's error body: `{ type: "error", error: { type, message } }` (the SDK hands over all of it). */
  readErrorBody(body: unknown): ErrorBody {
    const { type, message } = ((body as { error?: unknown } | null)?.error ?? {}) as Record<string, unknown>;
    return { codes: [type], message };
  },
};
