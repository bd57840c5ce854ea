import type { LlmRequest } from '../../provider/provider.ts';

/** The Messages API request body `encodeAnthropic` makes. */
export interface AnthropicBody {
  readonly model: string;
  readonly max_tokens: number;
  readonly messages: { readonly role: 'user' | 'assistant'; readonly content: string }[];
  readonly tools: {
    readonly name: string;
    readonly description?: string | undefined;
    readonly input_schema: { type: 'object'; [key: string]: unknown };
  }[];
  readonly tool_choice: { readonly type: 'tool'; readonly name: string };
}

/**
 * A request as the Anthropic Messages API takes it (`POST {baseUrl}/v1/messages`): the prompt as
 * one user message (then the conversation after it, a repair's: its turns alternate, as the API
 * requires), the task as one tool the model is made to use (`tool_choice: { type: "tool" }`),
 * named after the task, whose input schema is the task's; the call's max tokens as `max_tokens`,
 * which Anthropic counts against output-token limits up front. The body of a live call and of a
 * batch row's `params` alike.
 */
export function encodeAnthropic(request: LlmRequest, model: string, maxOutputTokens: number): AnthropicBody {
  const tool = request.task;
  return {
    model,
    max_tokens: maxOutputTokens,
    messages: [{ role: 'user', content: request.prompt }, ...(request.messages ?? [])],
    tools: [{ name: tool, description: request.description, input_schema: request.schema as { type: 'object'; [key: string]: unknown } }],
    tool_choice: { type: 'tool', name: tool },
  };
}
