import { MalformedOutputError, type SummarizeOutput } from '../provider.ts';
import type { Task } from './task.ts';

/** Keywords a summary lists; the schema asks for them, the parse takes at most this many. */
export const SUMMARY_KEYWORDS = 5;

/** Summarise the article and name its main keywords. */
export const summarizeTask: Task<SummarizeOutput> = Object.freeze({
  name: 'summarize',
  instruction: `Summarise this news article in one or two sentences and list its ${SUMMARY_KEYWORDS} main keywords.`,
  description: 'The summary of a news article and its main keywords.',
  schema: Object.freeze({
    type: 'object',
    properties: {
      summary: { type: 'string', description: 'One or two sentences.' },
      keywords: { type: 'array', items: { type: 'string' }, description: `The ${SUMMARY_KEYWORDS} main keywords, most important first.` },
    },
    required: ['summary', 'keywords'],
    additionalProperties: false,
  }),
  toOutput(answer: unknown): SummarizeOutput {
    const { summary, keywords } = answer as { summary: string; keywords: string[] };
    if (summary.trim() === '') throw new MalformedOutputError('the summary is empty');
    return {
      task: 'summarize',
      summary: summary.trim(),
      keywords: keywords
        .map((keyword) => keyword.trim())
        .filter((keyword) => keyword !== '')
        .slice(0, SUMMARY_KEYWORDS),
    };
  },
});
