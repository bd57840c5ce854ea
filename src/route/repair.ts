import { MalformedOutputError, type LlmRequest } from '../provider/provider.ts';
import type { GateAttempt } from '../gate/attempt.ts';

/**
 * The request that repairs an unfit answer, as instructor re-asks: the conversation so far, then the
 * answer as the assistant's turn and what is wrong with it — each field and what was expected
 * there — as the user's. Undefined when `error` carries no answer to show (a response with no
 * message, no tool use): there is nothing to mend, only to ask again.
 */
export function repairRequest(request: LlmRequest, error: unknown): LlmRequest | undefined {
  if (!(error instanceof MalformedOutputError) || error.answer === undefined) return undefined;
  const problems = error.problems.map((problem) => `- ${problem.path === '' ? 'the answer' : problem.path}: ${problem.message}`);
  const content = [
    `That answer does not fit the ${request.task} schema:`,
    ...problems,
    'Answer again with a corrected JSON object that fits the schema, and nothing else.',
  ].join('\n');
  return {
    ...request,
    messages: [...(request.messages ?? []), { role: 'assistant', content: error.answer }, { role: 'user', content }],
  };
}

/**
 * The repair to make after `attempt`, or undefined: only an unfit answer is repaired, at most
 * `maxRepairs` times a call (`repairs` made so far), and only before its deadline: a repair is asked
 * at once, apart from the retries and their count.
 */
export function repairAfter(
  attempt: GateAttempt,
  asked: LlmRequest,
  repairs: number,
  maxRepairs: number,
  deadlineMs: number,
): LlmRequest | undefined {
  return attempt.outcome === 'malformed' && repairs < maxRepairs && attempt.atMs < deadlineMs
    ? repairRequest(asked, attempt.error)
    : undefined;
}
