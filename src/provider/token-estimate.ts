import type { LlmRequest } from './provider.ts';
import { promptOf } from './tasks/answer.ts';
import { loadOptional } from '../optional-package.ts';

type Encoder = (text: string) => number;
let encoder: Promise<Encoder> | undefined;

/**
 * Loads the tokenizer {@link estimateInputTokens} counts with; rejects with `MissingPackageError`
 * when `gpt-tokenizer` is not installed. Loaded once: its tables take ~0.5 s.
 */
export function loadTokenizer(): Promise<Encoder> {
  encoder ??= loadOptional('gpt-tokenizer', 'counting prompt tokens for token limits', () => import('gpt-tokenizer')).then(
    (module) => (text: string) => module.countTokens(text),
  );
  return encoder;
}

/**
 * Counts the prompt's tokens with a real BPE tokenizer (gpt-tokenizer, o200k). The tokenizer is
 * loaded on first use only: runs without token limits never pay for it.
 */
export async function estimateInputTokens(request: LlmRequest): Promise<number> {
  return (await loadTokenizer())(promptOf(request));
}
