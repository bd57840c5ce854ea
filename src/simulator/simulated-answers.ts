/**
 * What the simulated provider answers — in process, and through `serve` over HTTP: the built-in
 * tasks get an analysis of the article in the prompt (a lead-sentence summary and keywords, a
 * lexicon sentiment), which means something a test or a demo can check; any other schema a value
 * made to fit it, of words from the prompt, checked with ajv.
 */

import type { JsonSchema } from '../provider/json-schema.ts';
import type { LlmOutput, LlmRequest } from '../provider/provider.ts';
import { validatorOf } from '../provider/schema-validators.ts';
import { seedFrom } from './random.ts';
import { sharedSchemaAnswers } from './schema-answers.ts';
import { analyzeSentiment, extractKeywords, summarize } from './text-analysis.ts';

/** Keywords a summary lists, as the built-in summarize task asks. */
const KEYWORD_COUNT = 5;
/** Words a string in a made value is drawn from, at most: the prompt's keywords. */
const ANSWER_WORDS = 8;

/** The tasks the simulation knows by their name and the properties their schema asks for. */
const KNOWN_TASKS: Readonly<Record<string, { readonly properties: string; answer(title: string, text: string): LlmOutput }>> = {
  summarize: {
    properties: 'keywords\nsummary',
    answer: (title, text) => ({ summary: summarize(title, text), keywords: extractKeywords(`${title}\n${text}`, KEYWORD_COUNT) }),
  },
  sentiment: {
    properties: 'score\nsentiment',
    answer: (title, text) => {
      const { sentiment, score } = analyzeSentiment(`${title}\n${text}`);
      return { sentiment, score };
    },
  },
};

/**
 * The built-in task a request asks for, by its name and its schema's properties (a schema of
 * another shape under the same name is not it), or undefined.
 */
export function knownTask(name: string, schema: JsonSchema): string | undefined {
  const task = Object.hasOwn(KNOWN_TASKS, name) ? KNOWN_TASKS[name] : undefined;
  if (task === undefined) return undefined;
  // A run sends each task's schema, the same object, with every article: its shape is read once.
  let names = propertyNames.get(schema);
  if (names === undefined) {
    const properties = schema.properties;
    names =
      schema.type === 'object' && properties !== null && typeof properties === 'object' ? Object.keys(properties).sort().join('\n') : '';
    propertyNames.set(schema, names);
  }
  return names === task.properties ? name : undefined;
}

const propertyNames = new WeakMap<JsonSchema, string>();

/**
 * The article in a prompt written as the built-in tasks write it (the instruction, `Title: …`, a
 * blank line, the body); any other prompt is all body.
 */
export function articleOf(prompt: string): { title: string; text: string } {
  const match = /(?:^|\n)Title: ([^\n]*)\n\n/.exec(prompt);
  if (match === null) return { title: '', text: prompt };
  return { title: match[1]!, text: prompt.slice(match.index + match[0].length) };
}

/**
 * The simulation's answer to `request`. A built-in task's analysis that does not fit the schema as
 * sent (one of the same shape that asks more: a `maxItems`, a pattern) gives way to a made value.
 * A made value is seeded by the task, the prompt and `seed`: articles get answers as varied as a
 * model's — enum members, numbers across their bounds, lists of other lengths, their own words —
 * and the same request the same answer. Throws `SchemaError` when no value can be made to fit.
 */
export function simulatedAnswer(request: LlmRequest, seed: number): LlmOutput {
  const { title, text } = articleOf(request.prompt);
  const known = knownTask(request.task, request.schema);
  const answers = sharedSchemaAnswers();
  const validate = validatorOf(request.schema);
  const variant = seedFrom(`${request.task}\n${request.prompt}`, seed);
  if (known !== undefined) {
    const output = KNOWN_TASKS[known]!.answer(title, text);
    if (validate(output)) return output;
    return answers.valueFor(request.schema, Object.values(output).flat().map(String), validate, variant) as LlmOutput;
  }
  return answers.valueFor(request.schema, extractKeywords(`${title}\n${text}`, ANSWER_WORDS), validate, variant) as LlmOutput;
}
