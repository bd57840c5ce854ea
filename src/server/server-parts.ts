import { loadOptional } from '../optional-package.ts';
import type { JsonSchema } from '../provider/json-schema.ts';
import { SchemaAnswers } from '../simulator/schema-answers.ts';
import type { Tokenizer } from './answer-choices.ts';
import type { ChatRequest } from '../vendors/serve/chat-api.ts';
import { LLM_SERVER_DEFAULTS } from './llm-server-options.ts';
import { ServerMetrics } from './server-metrics.ts';

/** What a server loads when it starts, not when it is imported. */
export interface Loaded {
  readonly schemas: SchemaAnswers;
  readonly metrics: ServerMetrics;
  readonly tokenizer: Tokenizer;
}

/**
 * A prepared request: what the API read, and the schema the answer is made for — the request's own,
 * with the constraints its descriptions state when those can be kept to; for free text and JSON mode
 * the simulation's summary, or the schema the prompt gives.
 */
export interface Prepared {
  readonly request: ChatRequest;
  readonly answerSchema: JsonSchema;
}

/** Loads what answering needs: ajv's validators, prom-client's metrics, the tokenizer. */
export async function loadServerParts(
  maxKeyLabels: number,
  remaining: Parameters<typeof ServerMetrics.create>[1],
  batchCounts: Parameters<typeof ServerMetrics.create>[2],
  batchApis: Parameters<typeof ServerMetrics.create>[3],
): Promise<Loaded> {
  const [schemas, metrics, tokenizer] = await Promise.all([
    SchemaAnswers.create(LLM_SERVER_DEFAULTS.maxSchemas),
    ServerMetrics.create(maxKeyLabels, remaining, batchCounts, batchApis),
    loadOptional('gpt-tokenizer', 'the server (it counts tokens)', () => import('gpt-tokenizer')),
  ]);
  return {
    schemas,
    metrics,
    tokenizer: {
      encode: (text) => tokenizer.encode(text),
      decode: (tokens) => tokenizer.decode(tokens),
      pieces: (tokens) => [...tokenizer.decodeGenerator(tokens)],
    },
  };
}
