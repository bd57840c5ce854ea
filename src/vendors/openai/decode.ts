import type { OpenAI } from 'openai';
import { readAnswer } from '../../provider/answer.ts';
import { MalformedOutputError, RefusalError, TruncatedOutputError, type LlmRequest, type LlmResponse } from '../../provider/provider.ts';
import { answerFacts, usageOf } from '../http-api.ts';
import type { ResponseMeta } from '../sdk-wire.ts';

/**
 * A chat completion read as the answer to `request` — a live call's body or a batch result's. The
 * answer is read only when it finished: cut off by the token limit is a `TruncatedOutputError`, a
 * refusal or the content filter a `RefusalError`, and the JSON is checked against the schema again.
 * Trusts nothing of the shape: a nearly compatible server may send any JSON.
 */
export async function decodeOpenAi(request: LlmRequest, body: object, meta: ResponseMeta, maxOutputTokens: number): Promise<LlmResponse> {
  const completion = body as Partial<OpenAI.ChatCompletion>;
  const { headers } = meta;
  // OpenAI counts the cached tokens among the prompt tokens; it writes the cache without saying how much.
  const usage = usageOf(completion?.usage?.prompt_tokens, completion?.usage?.completion_tokens, {
    read: completion?.usage?.prompt_tokens_details?.cached_tokens,
  });
  // No status on these: the request succeeded, its answer did not (and cost what it used).
  const failed = { headers, usage };
  const choice = completion?.choices?.[0];
  if (choice?.message === undefined) throw new MalformedOutputError('the response has no choice with a message', failed);
  if (choice.finish_reason === 'length') {
    throw new TruncatedOutputError(`the answer was cut off by the token limit (max_completion_tokens ${maxOutputTokens})`, failed);
  }
  if (choice.finish_reason === 'content_filter') throw new RefusalError('the content filter stopped the answer', failed);
  if (typeof choice.message.refusal === 'string') throw new RefusalError(`the model refused: ${choice.message.refusal}`, failed);
  const output = await readAnswer(request, choice.message.content, failed);
  const choices: unknown[] = Array.isArray(completion.choices) ? completion.choices : [];
  const finishReasons = choices.map((each) => (each as Partial<OpenAI.ChatCompletion.Choice> | null)?.finish_reason);
  return { output, usage, headers, ...answerFacts(completion.model, completion.id, finishReasons) };
}
