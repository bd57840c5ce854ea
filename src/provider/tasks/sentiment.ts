import { MalformedOutputError, type Sentiment, type SentimentOutput } from '../provider.ts';
import type { Task } from './task.ts';

const SENTIMENTS: readonly Sentiment[] = ['positive', 'negative', 'neutral'];

/** Classify the article's sentiment, with a score. */
export const sentimentTask: Task<SentimentOutput> = Object.freeze({
  name: 'sentiment',
  instruction: 'Classify the sentiment of this news article as positive, negative or neutral, with a score from -1 to 1.',
  description: 'The sentiment of a news article and its score.',
  schema: Object.freeze({
    type: 'object',
    properties: {
      sentiment: { type: 'string', enum: SENTIMENTS },
      score: { type: 'number', description: 'From -1 (most negative) to 1 (most positive).' },
    },
    required: ['sentiment', 'score'],
    additionalProperties: false,
  }),
  toOutput(answer: unknown): SentimentOutput {
    const { sentiment, score } = answer as { sentiment: Sentiment; score: number };
    // Strict schemas cannot bound a number on every provider: the range is checked here.
    if (!(score >= -1 && score <= 1)) throw new MalformedOutputError(`the score ${score} is outside [-1, 1]`);
    return { task: 'sentiment', sentiment, score };
  },
});
