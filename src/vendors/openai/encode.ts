import type { LlmRequest } from '../../provider/provider.ts';

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
}

/**
 * A request as the OpenAI chat completions API takes it (`POST {baseUrl}/chat/completions`): the
 * prompt as one user message (then the conversation after it, a repair's), the task asked for in strict structured output
 * (`response_format: json_schema` named after the task, its schema, `strict: true`), the call's max
 * tokens as `max_completion_tokens`. The body of a live call and of a batch row alike.
 */
export function encodeOpenAi(request: LlmRequest, model: string, maxOutputTokens: number): OpenAiBody {
  return {
    model,
    messages: [{ role: 'user', content: request.prompt }, ...(request.messages ?? [])],
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: request.task,
        description: request.description,
        schema: request.schema as Record<string, unknown>,
        strict: true,
      },
    },
    max_completion_tokens: maxOutputTokens,
  };
}
