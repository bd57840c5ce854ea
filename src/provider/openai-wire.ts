import type { OpenAI } from 'openai';
import {
  apiBodyOf,
  headersOf,
  sdkClientOptions,
  sdkRequestOptions,
  usageOf,
  WARM_UP_ANSWER,
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
import { OPENAI_DEFAULTS } from './vendor-defaults.ts';

/**
 * The OpenAI chat completions API (`POST {baseUrl}/chat/completions`) as `OpenAiProvider` speaks it.
 *
 * A provider over the OpenAI chat completions API (`POST {baseUrl}/chat/completions`), or any
 * server that speaks it, through the official `openai` SDK — its own retries off, so that the call
 * gate's limiter, breaker and retries see every attempt.
 *
 * Each task is asked for in strict structured output (`response_format: json_schema` named after the
 * task, its schema, `strict: true`) with the call's max tokens as `max_completion_tokens`. The answer is read
 * only when it finished: cut off by the token limit is a `TruncatedOutputError`, a refusal or the
 * content filter a `RefusalError`, and the JSON is checked against the schema again. Response
 * headers (rate-limit status, retry-after) come back on the response and on every error.
 *
 * The SDK is loaded when the provider is made, not when the library is imported; `ready()` also
 * runs a call through it to a canned answer, sending nothing.
 */
export const OPENAI_WIRE: SdkWire<OpenAI> = {
  defaults: OPENAI_DEFAULTS,

  load: async (settings) => {
    const sdk = await loadOptional('openai', 'the OpenAI provider', () => import('openai'));
    return { client: new sdk.OpenAI(sdkClientOptions(settings)), errors: sdk };
  },

  async send({ client, errors }: Sdk<OpenAI>, request: LlmRequest, options: CallOptions, context: SendContext): Promise<LlmResponse> {
    const body = {
      model: context.model,
      messages: [{ role: 'user' as const, content: request.prompt }],
      response_format: {
        type: 'json_schema' as const,
        json_schema: {
          name: request.task,
          description: request.description,
          schema: request.schema as Record<string, unknown>,
          strict: true,
        },
      },
      max_completion_tokens: options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
    };
    const { data, response } = await client.chat.completions
      .create(body, sdkRequestOptions(options))
      .withResponse()
      .catch((error: unknown) => {
        throw context.failure(error, errors, options);
      });

    const headers = headersOf(response.headers);
    // A server that is only nearly compatible may send any JSON: nothing below trusts the shape.
    const completion = apiBodyOf(data, response, { headers }) as Partial<OpenAI.ChatCompletion>;
    const usage = usageOf(completion?.usage?.prompt_tokens, completion?.usage?.completion_tokens);
    // No status on these: the request succeeded, its answer did not (and cost what it used).
    const meta = { headers, usage };
    const choice = completion?.choices?.[0];
    if (choice?.message === undefined) throw new MalformedOutputError('the response has no choice with a message', meta);
    if (choice.finish_reason === 'length') {
      throw new TruncatedOutputError(
        `the answer was cut off by the token limit (max_completion_tokens ${body.max_completion_tokens})`,
        meta,
      );
    }
    if (choice.finish_reason === 'content_filter') throw new RefusalError('the content filter stopped the answer', meta);
    if (typeof choice.message.refusal === 'string') throw new RefusalError(`the model refused: ${choice.message.refusal}`, meta);
    return { output: await readAnswer(request, choice.message.content, meta), usage, headers };
  },

  /** A completion answering the warm-up call. */
  cannedAnswer(): OpenAI.ChatCompletion {
    return {
      id: 'warm-up',
      object: 'chat.completion',
      created: 0,
      model: 'warm-up',
      choices: [
        {
          index: 0,
          finish_reason: 'stop',
          logprobs: null,
          message: { role: 'assistant', content: JSON.stringify(WARM_UP_ANSWER), refusal: null },
        },
      ],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    };
  },

  /** OpenAI's error body: `{ error: { message, type, code } }` (the SDK hands over the inner object). */
  readErrorBody(error: unknown): ErrorBody {
    const { code, type, message } = (error ?? {}) as Record<string, unknown>;
    return { codes: [code, type], message };
  },
};
