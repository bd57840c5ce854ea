import type { LlmRequest } from '../../provider/provider.ts';
import { SharedParts } from '../shared-part.ts';

/** One turn of a Gemini conversation: the user's, or the model's (a repair shows its unfit answer back). */
export interface GeminiContent {
  readonly role: 'user' | 'model';
  readonly parts: readonly { readonly text: string }[];
}

/** How the answer is to be made: JSON fitting the task's schema, at most the call's output tokens. */
export interface GeminiGenerationConfig {
  readonly responseMimeType: 'application/json';
  readonly responseJsonSchema: Record<string, unknown>;
  readonly maxOutputTokens: number;
}

/** The `generateContent` request body `encodeGemini` makes. */
export interface GeminiBody {
  /**
   * `models/{model}`: what a batch row's request names (as `@google/genai` writes it); a live call
   * names the model in its URL and sends the rest.
   */
  readonly model: string;
  readonly contents: readonly GeminiContent[];
  readonly generationConfig: GeminiGenerationConfig;
}

/**
 * A request as the Gemini API takes it (`POST {baseUrl}/v1beta/models/{model}:generateContent`):
 * the prompt as one user turn (then the conversation after it, a repair's, the model's turns as
 * `model`), the task's schema as structured output (`generationConfig.responseMimeType:
 * "application/json"` with `responseJsonSchema`, which takes JSON Schema as it is; titled with the
 * task's name when it has no title), the call's
 * max tokens as `maxOutputTokens`. Gemini caches a shared prefix by itself (implicit caching):
 * nothing to mark. The body of a live call and of a batch row's `request` alike.
 */
export function encodeGemini(request: LlmRequest, model: string, maxOutputTokens: number): GeminiBody {
  const first: GeminiContent = { role: 'user', parts: [{ text: request.prompt }] };
  return {
    model: `models/${model}`,
    contents:
      request.messages === undefined
        ? [first]
        : [
            first,
            ...request.messages.map(
              (message) => ({ role: message.role === 'assistant' ? 'model' : 'user', parts: [{ text: message.content }] }) as const,
            ),
          ],
    // The same object for every request of the task with the same cap: a batch's rows serialize it once.
    generationConfig: generationConfigs.get(request.schema as object, `${request.task}\u0000${maxOutputTokens}`, undefined, () => ({
      responseMimeType: 'application/json',
      responseJsonSchema: titled(request.schema as Record<string, unknown>, request.task),
      maxOutputTokens,
    })),
  };
}

const generationConfigs = new SharedParts<GeminiGenerationConfig>();

/**
 * The task's schema named after the task (`title`), as OpenAI's `json_schema.name` and Anthropic's
 * tool name it: Gemini's structured output has no name of its own. A schema with a title keeps it.
 */
function titled(schema: Record<string, unknown>, task: string): Record<string, unknown> {
  return schema.title === undefined ? { title: task, ...schema } : schema;
}
