import type { ErrorObject } from 'ajv';
import { MalformedOutputError, type LlmOutput, type LlmRequest, type ProviderErrorOptions } from './provider.ts';
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
  if (typeof answer === 'string') {
    try {
      value = JSON.parse(answer);
    } catch (error) {
      throw new MalformedOutputError(`the answer is not JSON (${(error as Error).message})`, meta);
    }
  }
  if (!isRecord(value)) throw new MalformedOutputError(`the answer is not a JSON object for the ${request.task} schema`, meta);
  const validate = validatorOf(request.schema);
  if (!validate(value)) {
    throw new MalformedOutputError(`the answer does not fit the ${request.task} schema: ${describe(validate.errors)}`, meta);
  }
  return value;
}

function describe(errors: readonly ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (first === undefined) return 'invalid';
  return `${first.instancePath === '' ? 'the answer' : first.instancePath} ${first.message ?? 'is invalid'}`;
}
