import type { LlmRequest } from './provider.ts';
import { promptOf } from './tasks/answer.ts';

type Encoder = (text: string) => number;
let encoder: Promise<Encoder> | undefined;

/**
 * Counts the prompt's tokens with a real BPE tokenizer (gpt-tokenizer, o200k). The tokenizer's
 * tables take ~0.5 s to load, so they are loaded on first use only — runs without token limits
 * never pay for them.
 */
export async function estimateInputTokens(request: LlmRequest): Promise<number> {
  encoder ??= import('gpt-tokenizer').then((module) => (text: string) => module.countTokens(text));
  return (await encoder)(promptOf(request));
}
