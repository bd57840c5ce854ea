import type { Anthropic } from '@anthropic-ai/sdk';
import { readAnswer } from '../../provider/answer.ts';
import { MalformedOutputError, RefusalError, TruncatedOutputError, type LlmRequest, type LlmResponse } from '../../provider/provider.ts';
import { answerFacts, promptCacheOf, usageOf } from '../http-api.ts';
import type { ResponseMeta } from '../sdk-wire.ts';

/** Stop reasons that mean the answer ran out of room before it was whole. */
const CUT_OFF: ReadonlySet<unknown> = new Set(['max_tokens', 'model_context_window_exceeded']);

/**
 * A message read as the answer to `request` — a live call's body or a batch result's. The answer is
 * read only when the model stopped to use the task's tool: `max_tokens` is a
 * `TruncatedOutputError`, `refusal` a `RefusalError`, and the tool's input is checked against the
 * schema again. Trusts nothing of the shape.
 */
export async function decodeAnthropic(
  request: LlmRequest,
  body: object,
  meta: ResponseMeta,
  maxOutputTokens: number,
): Promise<LlmResponse> {
  const message = body as Partial<Anthropic.Message>;
  const { headers } = meta;
  const tool = request.task;
  const usage = usageOf(message?.usage?.input_tokens, message?.usage?.output_tokens);
  // No status on these: the request succeeded, its answer did not (and cost what it used).
  const failed = { headers, usage };
  const stopReason = message?.stop_reason;
  if (CUT_OFF.has(stopReason))
    throw new TruncatedOutputError(`the answer was cut off (${stopReason}; max_tokens ${maxOutputTokens})`, failed);
  if (stopReason === 'refusal') throw new RefusalError('the model refused to answer', failed);
  const content: unknown[] = Array.isArray(message?.content) ? message.content : [];
  const use = content.find(
    (block): block is Anthropic.ToolUseBlock =>
      (block as Partial<Anthropic.ToolUseBlock> | null)?.type === 'tool_use' && (block as Anthropic.ToolUseBlock).name === tool,
  );
  if (use === undefined)
    throw new MalformedOutputError(`the answer did not use the ${tool} tool (stop reason ${String(stopReason)})`, failed);
  const output = await readAnswer(request, use.input, failed);
  // Anthropic's input tokens leave out those the cache served or stored: they are billed apart.
  const promptCache = promptCacheOf(message.usage?.cache_read_input_tokens, message.usage?.cache_creation_input_tokens, false);
  return { output, usage, headers, ...answerFacts(message.model, message.id, [stopReason]), promptCache };
}
