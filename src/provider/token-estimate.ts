import type { LlmRequest } from './provider.ts';
import { loadOptional } from '../optional-package.ts';

type Encoder = (text: string) => number;
let encoder: Promise<Encoder> | undefined;

/**
 * Loads the tokenizer {@link estimateInputTokens} counts with; rejects with `MissingPackageError`
 * when `gpt-tokenizer` is not installed. Loaded once: its tables take ~0.5 s.
 */
export function loadTokenizer(): Promise<(text: string) => number> {
  encoder ??= loadOptional('gpt-tokenizer', 'counting prompt tokens for token limits', () => import('gpt-tokenizer')).then(
    (module) => (text: string) => module.countTokens(text),
  );
  return encoder;
}

/** Each request's schema counted once: a run sends each task's schema, the same object, with every article. */
const schemaTokens = new WeakMap<object, number>();

/**
 * Counts what a request sends with a real BPE tokenizer (gpt-tokenizer, o200k): its prompt, and its
 * schema, which the providers put in the model's context too. The tokenizer is loaded on first use
 * only: runs without token limits never pay for it.
 */
export async function estimateInputTokens(request: LlmRequest): Promise<number> {
  const count = await loadTokenizer();
  let forSchema = schemaTokens.get(request.schema);
  if (forSchema === undefined) {
    forSchema = count(JSON.stringify(request.schema));
    schemaTokens.set(request.schema, forSchema);
  }
  return count(request.prompt) + forSchema;
}
