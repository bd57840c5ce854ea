/**
 * The pipeline's own tasks as they arrive over HTTP: recognised by the schema's (or tool's) name and
 * the properties it asks for, and answered from the article in the prompt as the simulated provider
 * answers in-process.
 */

import { TASKS, type LlmOutput, type TaskName } from '../provider/provider.ts';
import { TASK_DEFINITIONS } from '../provider/tasks/answer.ts';
import type { JsonSchema } from '../provider/tasks/task.ts';

/** The task a structured-output request asks for, when it is one of ours: its name and its properties. */
export function taskOf(name: string, schema: JsonSchema): TaskName | undefined {
  const task = TASKS.find((candidate) => candidate === name);
  if (task === undefined) return undefined;
  return samePropertyNames(TASK_DEFINITIONS[task].schema, schema) ? task : undefined;
}

function samePropertyNames(ours: JsonSchema, theirs: JsonSchema): boolean {
  const names = (schema: JsonSchema) => {
    const properties = schema.properties;
    return properties !== null && typeof properties === 'object' ? Object.keys(properties).sort().join('\n') : undefined;
  };
  return theirs.type === 'object' && names(ours) === names(theirs);
}

/**
 * The article in a prompt written as the pipeline writes it (the instruction, `Title: …`, a blank
 * line, the body); any other prompt is all body.
 */
export function articleOf(prompt: string): { title: string; text: string } {
  const match = /(?:^|\n)Title: ([^\n]*)\n\n/.exec(prompt);
  if (match === null) return { title: '', text: prompt };
  return { title: match[1]!, text: prompt.slice(match.index + match[0].length) };
}

/** The task's output as the answer the task's schema describes. */
export function answerOf(output: LlmOutput): Record<string, unknown> {
  return output.task === 'summarize'
    ? { summary: output.summary, keywords: [...output.keywords] }
    : { sentiment: output.sentiment, score: output.score };
}
