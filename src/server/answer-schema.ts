import type { JsonSchema } from '../provider/json-schema.ts';
import { SchemaError } from '../provider/schema-validators.ts';
import type { SchemaAnswers } from '../simulator/schema-answers.ts';
import { knownTask } from '../simulator/simulated-answers.ts';
import type { ChatRequest } from '../vendors/serve/chat-api.ts';
import { withDescribedConstraints } from './described-constraints.ts';
import { schemaInPrompt } from './prompt-schema.ts';

/** What free text and `json_object` answers are: the simulation's summary of the article in the prompt. */
export const SUMMARY_SCHEMA: JsonSchema = Object.freeze({
  type: 'object',
  properties: { summary: { type: 'string' }, keywords: { type: 'array', items: { type: 'string' } } },
  required: ['summary', 'keywords'],
  additionalProperties: false,
});
/**
 * The request's schema, checked: it compiles and admits a value (SchemaError otherwise). With the
 * constraints its descriptions state added, when values fit that and the schema as sent alike.
 */
export function schemaToAnswer(schemas: SchemaAnswers, name: string, schema: JsonSchema): JsonSchema {
  const validate = schemas.validator(schema);
  // The pipeline's own tasks are answered from the article; any other schema must admit a value.
  if (knownTask(name, schema) !== undefined) return schema;
  const described = withDescribedConstraints(schema);
  if (described !== schema) {
    try {
      const value = schemas.valueFor(described, [], schemas.validator(described));
      if (validate(value)) return described;
    } catch (error) {
      // Words that make no schema, or one nothing fits, are words only.
      if (!(error instanceof SchemaError)) throw error;
    }
  }
  schemas.valueFor(schema, [], validate);
  return schema;
}

/**
 * For JSON mode, the schema the prompt gives, when it gives one that can be answered; undefined
 * otherwise (the answer is then the article's summary as JSON). A prompt's schema is the client's
 * text, not a parameter: one that cannot be answered is no error.
 */
export function promptedSchema(schemas: SchemaAnswers, request: ChatRequest): JsonSchema | undefined {
  const schema = schemaInPrompt(request.promptText);
  if (schema === undefined) return undefined;
  try {
    return schemaToAnswer(schemas, 'json_object', schema);
  } catch (error) {
    if (error instanceof SchemaError) return undefined;
    throw error;
  }
}

/**
 * What the simulated provider is asked: the summary (free text, and JSON mode without a schema),
 * the request's schema under its name, or for JSON mode the schema its prompt gives — answered from
 * what the prompt says around it, not from the schema's own words.
 */
export function taskOfAnswer(request: ChatRequest, answerSchema: JsonSchema): { task: string; prompt: string } {
  const { shape, lastUserText } = request;
  if (answerSchema === SUMMARY_SCHEMA) return { task: 'summarize', prompt: lastUserText };
  if (shape.kind === 'schema' || shape.kind === 'tool') return { task: shape.name, prompt: lastUserText };
  return { task: 'json_object', prompt: lastUserText.replace(/```[\s\S]*?```/g, '') };
}
