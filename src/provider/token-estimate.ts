import type { LlmRequest } from './provider.ts';

/** What the model would be asked for each task: the instruction in front of the article. */
const INSTRUCTIONS: Readonly<Record<LlmRequest['task'], string>> = {
  summarize: 'Summarise this news article in one or two sentences and list its five main keywords.',
  sentiment: 'Classify the sentiment of this news article as positive, negative or neutral, with a score from -1 to 1.',
};

/** The prompt a real provider would receive for `request`. */
export function promptFor(request: LlmRequest): string {
  return `${INSTRUCTIONS[request.task]}\n\nTitle: ${request.title}\n\n${request.text}`;
}

type Encoder = (text: string) => number;
let encoder: Promise<Encoder> | undefined;

/**
 * Counts the prompt's tokens with a real BPE tokenizer (gpt-tokenizer, o200k). The tokenizer's
 * tables take ~0.5 s to load, so they are loaded on first use only — runs without token limits
 * never pay for them.
 */
export async function estimateInputTokens(request: LlmRequest): Promise<number> {
  encoder ??= import('gpt-tokenizer').then((module) => (text: string) => module.countTokens(text));
  return (await encoder)(promptFor(request));
}
