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
  // The answer as the model gave it, for a repair to show it back.
  const text = typeof answer === 'string' ? answer : (JSON.stringify(answer) ?? String(answer));
  if (typeof answer === 'string') {
    try {
      value = JSON.parse(answer);
    } catch (error) {
      const message = `is not JSON (${(error as Error).message})`;
      throw new MalformedOutputError(`the answer ${message}`, { ...meta, answer: text, problems: [{ path: '', message }] });
    }
  }
  if (!isRecord(value)) {
    const problems = [{ path: '', message: 'must be a JSON object' }];
    throw new MalformedOutputError(`the answer is not a JSON object for the ${request.task} schema`, { ...meta, answer: text, problems });
  }
  const validate = validatorOf(request.schema);
  if (!validate(value)) {
    const problems = problemsOf(validate.errors);
    throw new MalformedOutputError(`the answer does not fit the ${request.task} schema: ${describe(problems[0])}`, {
      ...meta,
      answer: text,
      problems,
    });
  }
  return value;
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
