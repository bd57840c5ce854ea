/**
 * A drafted answer made into what is sent, as a model's output ends: at the first stop sequence it
 * writes, or at the request's output token limit, whichever comes first — and split into the
 * tokens a stream sends one by one.
 */

import type { AnswerChoice, ChatRequest, FinishReason } from '../vendors/serve/chat-api.ts';
import { tokenLogprobs } from './token-logprobs.ts';

/** The tokenizer's three operations the answer needs. */
export interface Tokenizer {
  encode(text: string): number[];
  decode(tokens: readonly number[]): string;
  /** The text of each token in turn (a character split across tokens comes whole, with the last of them). */
  pieces(tokens: readonly number[]): string[];
}

/** The draft: words, or a value (a schema's answer, a tool's input). */
export interface Draft {
  readonly text?: string;
  readonly value?: unknown;
}

/** The draft as one choice of the answer. */
export function answerChoice(request: ChatRequest, draft: Draft, tokenizer: Tokenizer): AnswerChoice {
  const tool = request.shape.kind === 'tool';
  let content = draft.text ?? JSON.stringify(draft.value);
  let finish: FinishReason = tool ? 'tool' : 'end';
  let stopSequence: string | undefined;
  // Stop sequences end what the model writes; a tool's arguments are not text they apply to.
  const stop = tool ? undefined : firstStop(content, request.stop ?? []);
  if (stop !== undefined) {
    content = content.slice(0, stop.index);
    finish = 'stop-sequence';
    stopSequence = stop.sequence;
  }
  let tokens = tokenizer.encode(content);
  if (request.maxOutputTokens !== undefined && tokens.length > request.maxOutputTokens) {
    tokens = tokens.slice(0, request.maxOutputTokens);
    content = tokenizer.decode(tokens);
    finish = 'length';
    stopSequence = undefined;
  }
  // Split token by token only when something reads the pieces: a stream, or log probabilities.
  const pieces = request.stream !== undefined || request.logprobs !== undefined ? tokenizer.pieces(tokens) : [];
  return {
    // Cut short, a value is not what was sent: only the JSON's first tokens were.
    ...(finish === 'end' || finish === 'tool' ? { value: draft.value } : {}),
    content,
    pieces,
    outputTokens: tokens.length,
    finish,
    stopSequence,
    logprobs: request.logprobs === undefined ? undefined : tokenLogprobs(pieces, request.logprobs.top),
  };
}

/** Where the earliest of the stop sequences begins in `text`, and which it is. */
function firstStop(text: string, sequences: readonly string[]): { index: number; sequence: string } | undefined {
  let first: { index: number; sequence: string } | undefined;
  for (const sequence of sequences) {
    const index = text.indexOf(sequence);
    if (index !== -1 && (first === undefined || index < first.index)) first = { index, sequence };
  }
  return first;
}

/** An unfit answer as the draft sent: a tool's input must be an object, so text that is not JSON goes as text. */
export function unfitDraft(answer: string, kind: ChatRequest['shape']['kind']): Draft {
  if (kind === 'text') return { text: answer };
  try {
    return { value: JSON.parse(answer) };
  } catch {
    return { text: answer };
  }
}
