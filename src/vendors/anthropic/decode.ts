import type { Anthropic } from '@anthropic-ai/sdk';
import { readAnswer } from '../../provider/answer.ts';
import { MalformedOutputError, RefusalError, TruncatedOutputError, type LlmRequest, type LlmResponse } from '../../provider/provider.ts';
import { answerFacts, usageOf } from '../http-api.ts';
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
  const usage = usageOfMessage(message?.usage);
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
  return { output, usage, headers, ...answerFacts(message.model, message.id, [stopReason]) };
}

/**
 * Anthropic's usage as the usage type counts it: its `input_tokens` leave out the tokens the
 * prompt cache served (`cache_read_input_tokens`) or stored (`cache_creation_input_tokens`), which
 * are billed apart, so the prompt's tokens are the three together.
 */
function usageOfMessage(usage: Partial<Anthropic.Usage> | undefined) {
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);
  const read = count(usage?.cache_read_input_tokens);
  const write = count(usage?.cache_creation_input_tokens);
  const input = usage?.input_tokens;
  return usageOf(typeof input === 'number' ? input + read + write : input, usage?.output_tokens, { read, write });
}
