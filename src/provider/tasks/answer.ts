import type { ErrorObject, ValidateFunction } from 'ajv';
import { MalformedOutputError, type LlmOutput, type LlmRequest, type TaskName } from '../provider.ts';
import { sentimentTask } from './sentiment.ts';
import { summarizeTask } from './summarize.ts';
import { promptFor, type Task } from './task.ts';

/** Every task, by name. */
export const TASK_DEFINITIONS: Readonly<Record<TaskName, Task>> = Object.freeze({
  summarize: summarizeTask,
  sentiment: sentimentTask,
});

/** The prompt a provider receives for `request`. */
export function promptOf(request: LlmRequest): string {
  return promptFor(TASK_DEFINITIONS[request.task], request);
}

let validators: Promise<(task: Task) => ValidateFunction> | undefined;

/**
 * The validator of each task's schema, compiled once. Ajv is loaded on first use: runs on the
 * simulated provider never pay for it.
 */
function validatorFor(task: Task): Promise<ValidateFunction> {
  validators ??= import('ajv').then(({ Ajv }) => {
    const ajv = new Ajv({ allErrors: false, strict: true });
    const compiled = new Map<Task, ValidateFunction>();
    return (of: Task) => {
      let validate = compiled.get(of);
      if (validate === undefined) {
        validate = ajv.compile(of.schema);
        compiled.set(of, validate);
      }
      return validate;
    };
  });
  return validators.then((forTask) => forTask(task));
}

/** Loads ajv and compiles every task's validator, so that reading the first answers waits for neither. */
export async function loadValidators(): Promise<void> {
  await Promise.all(Object.values(TASK_DEFINITIONS).map(validatorFor));
}

/**
 * The output an answer means: `answer` is the model's JSON text (OpenAI's message content) or the
 * value already parsed (Anthropic's tool input). Rejects with {@link MalformedOutputError} when it
 * does not parse, does not fit the task's schema — checked again here, whatever the provider
 * promised — or says what the schema cannot (an empty summary, a score out of range).
 */
export async function readAnswer(task: Task, answer: unknown): Promise<LlmOutput> {
  let value = answer;
  if (typeof answer === 'string') {
    try {
      value = JSON.parse(answer);
    } catch (error) {
      throw new MalformedOutputError(`the answer is not JSON (${(error as Error).message})`);
    }
  }
  const validate = await validatorFor(task);
  if (!validate(value)) throw new MalformedOutputError(`the answer does not fit the ${task.name} schema: ${describe(validate.errors)}`);
  return task.toOutput(value);
}

function describe(errors: readonly ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (first === undefined) return 'invalid';
  return `${first.instancePath === '' ? 'the answer' : first.instancePath} ${first.message ?? 'is invalid'}`;
}
