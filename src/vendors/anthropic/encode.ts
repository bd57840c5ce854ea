import type { LlmRequest } from '../../provider/provider.ts';
import { promptHeadOf, roughTokens } from '../prompt-head.ts';
import { minCacheTokens } from './defaults.ts';
import { SharedParts } from '../shared-part.ts';

/** A text block of a message; `cache_control` marks the end of a prefix Anthropic caches. */
export interface AnthropicTextBlock {
  readonly type: 'text';
  readonly text: string;
  readonly cache_control?: { readonly type: 'ephemeral' } | undefined;
}

/** The Messages API request body `encodeAnthropic` makes. */
export interface AnthropicBody {
  readonly model: string;
  readonly max_tokens: number;
  readonly messages: { readonly role: 'user' | 'assistant'; readonly content: string | AnthropicTextBlock[] }[];
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
 * which Anthropic counts against output-token limits up front. A task's prompt head long enough
 * for the model to cache (its documented minimum, `minCacheTokens`) is the message's first block,
 * marked `cache_control: { type: "ephemeral" }` (a 5-minute cache): the tool and the head are then
 * read from the cache by every article after the first. The body of a live call and of a batch
 * row's `params` alike.
 */
export function encodeAnthropic(request: LlmRequest, model: string, maxOutputTokens: number): AnthropicBody {
  const tool = request.task;
  return {
    model,
    max_tokens: maxOutputTokens,
    messages: [{ role: 'user', content: promptContent(request, model) }, ...(request.messages ?? [])],
    // The same objects for every request of the task: a batch's rows serialize them once.
    tools: tools.get(request.schema as object, tool, request.description, () => [
      { name: tool, description: request.description, input_schema: request.schema as { type: 'object'; [key: string]: unknown } },
    ]),
    tool_choice: toolChoices.get(request.schema as object, tool, undefined, () => ({ type: 'tool', name: tool })),
  };
}

const tools = new SharedParts<AnthropicBody['tools']>();
const toolChoices = new SharedParts<AnthropicBody['tool_choice']>();

/** The prompt as one string, or as its marked head and the rest when the head is long enough to cache. */
function promptContent(request: LlmRequest, model: string): string | AnthropicTextBlock[] {
  const split = promptHeadOf(request);
  if (split === undefined || roughTokens(split.head) < minCacheTokens(model)) return request.prompt;
  const head: AnthropicTextBlock = { type: 'text', text: split.head, cache_control: { type: 'ephemeral' } };
  // Anthropic refuses an empty text block: a prompt that is all head is the marked block alone.
  return split.rest === '' ? [head] : [head, { type: 'text', text: split.rest }];
}
