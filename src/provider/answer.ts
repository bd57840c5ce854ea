import type { ErrorObject } from 'ajv';
import { MalformedOutputError, type AnswerProblem, type LlmOutput, type LlmRequest, type ProviderErrorOptions } from './provider.ts';
import { isRecord } from './json-schema.ts';
import { validatorOf } from './schema-validators.ts';

/**
 * The output an answer means: `answer` is the model's JSON text (OpenAI's message content) or the
 * value already parsed (Anthropic's tool input). Rejects with {@link MalformedOutputError} — carrying
 * `meta`, the response's headers and usage, so the limits and the cost still hear of the call —
 * when it does not parse, is not an object, or does not fit the request's schema: checked here,
 * whatever the provider promised.
 */
export async function readAnswer(request: LlmRequest, answer: unknown, meta: ProviderErrorOptions = {}): Promise<LlmOutput> {
  let value = answer;
  // The answer as the model gave it, for a repair to show it back (a parsed one is written out only if unfit).
  const text = typeof answer === 'string' ? answer : undefined;
  if (typeof answer === 'string') {
    try {
      value = JSON.parse(answer);
    } catch (error) {
      const message = `is not JSON (${(error as Error).message})`;
      throw new MalformedOutputError(`the answer ${message}`, { ...meta, answer: text, problems: [{ path: '', message }] });
    }
  }
  const unfit = unfitAnswer(request, value, text, meta);
  if (unfit !== undefined) throw unfit;
  return value as LlmOutput;
}

/** Whether `value` is a JSON object that fits `request`'s schema: {@link unfitAnswer}'s question, without its answer. */
export function answerFits(request: LlmRequest, value: unknown): boolean {
  return isRecord(value) && validatorOf(request.schema)(value);
}

/**
 * What is wrong with `value` as the answer to `request` — not a JSON object, or not one that fits
 * the request's schema — as the {@link MalformedOutputError} a repair shows back to the model, or
 * undefined when it fits. Synchronous, and allocation-free when it fits: the call loop asks it of
 * every answer from a provider that does not check its own. `text` is the answer as the model gave
 * it (default: `value` as JSON); `meta`, the response's headers and usage, goes on the error.
 */
export function unfitAnswer(
  request: LlmRequest,
  value: unknown,
  text?: string,
  meta?: ProviderErrorOptions,
): MalformedOutputError | undefined {
  if (!isRecord(value)) {
    const problems = [{ path: '', message: 'must be a JSON object' }];
    return new MalformedOutputError(`the answer is not a JSON object for the ${request.task} schema`, {
      ...meta,
      answer: text ?? asText(value),
      problems,
    });
  }
  const validate = validatorOf(request.schema);
  if (validate(value)) return undefined;
  const problems = problemsOf(validate.errors);
  return new MalformedOutputError(`the answer does not fit the ${request.task} schema: ${describe(problems[0])}`, {
    ...meta,
    answer: text ?? asText(value),
    problems,
  });
}

function asText(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** The validator's errors as problems: the field, and what was expected there. */
function problemsOf(errors: readonly ErrorObject[] | null | undefined): AnswerProblem[] {
  if (errors === null || errors === undefined || errors.length === 0) return [{ path: '', message: 'is invalid' }];
  return errors.map((error) => ({
    path: error.instancePath,
    message:
      error.keyword === 'additionalProperties'
        ? `must not have the property '${(error.params as { additionalProperty: string }).additionalProperty}'`
        : (error.message ?? 'is invalid'),
  }));
}

function describe(problem: AnswerProblem | undefined): string {
  if (problem === undefined) return 'invalid';
  return `${problem.path === '' ? 'the answer' : problem.path} ${problem.message}`;
}
