import type { LlmRequest } from '../../provider/provider.ts';
import { promptCacheKey, promptHeadOf } from '../prompt-head.ts';
import { SharedParts } from '../shared-part.ts';

/** The chat completions request body `encodeOpenAi` makes. */
export interface OpenAiBody {
  readonly model: string;
  readonly messages: { readonly role: 'user' | 'assistant'; readonly content: string }[];
  readonly response_format: {
    readonly type: 'json_schema';
    readonly json_schema: {
      readonly name: string;
      readonly description?: string | undefined;
      readonly schema: Record<string, unknown>;
      readonly strict: true;
    };
  };
  readonly max_completion_tokens: number;
  /** Which prompt cache to route to: the task's head named (`promptCacheKey`). */
  readonly prompt_cache_key?: string | undefined;
}

/**
 * A request as the OpenAI chat completions API takes it (`POST {baseUrl}/chat/completions`): the
 * prompt as one user message (then the conversation after it, a repair's), the task asked for in strict structured output
 * (`response_format: json_schema` named after the task, its schema, `strict: true`), the call's max
 * tokens as `max_completion_tokens`. A task's prompt head, which comes first, names the prompt
 * cache the request goes to (`prompt_cache_key`, one per task and head): OpenAI caches a prefix of
 * 1,024 tokens or more by itself, and the key keeps a task's requests on the same cache. The body
 * of a live call and of a batch row alike.
 */
export function encodeOpenAi(request: LlmRequest, model: string, maxOutputTokens: number): OpenAiBody {
  const split = promptHeadOf(request);
  return {
    model,
    messages: [{ role: 'user', content: request.prompt }, ...(request.messages ?? [])],
    // The same object for every request of the task: a batch's rows serialize it once.
    response_format: responseFormats.get(request.schema as object, request.task, request.description, () => ({
      type: 'json_schema',
      json_schema: {
        name: request.task,
        description: request.description,
        schema: request.schema as Record<string, unknown>,
        strict: true,
      },
    })),
    max_completion_tokens: maxOutputTokens,
    ...(split !== undefined && { prompt_cache_key: promptCacheKey(request.task, split.head) }),
  };
}

const responseFormats = new SharedParts<OpenAiBody['response_format']>();
