import { describe, it, expect } from 'vitest';
import { MAX_SUMMARY_CHARS, analyzeSentiment, extractKeywords, summarize } from '../../src/simulator/text-analysis.ts';

describe('summarize()', () => {
  it('summarize() - returns the lead sentence', () => {
    const text =
      'The central bank raised interest rates by half a point on Tuesday, its largest increase in two decades. ' +
      'Markets fell sharply after the announcement. Analysts expect further rises.';
    expect(summarize('Rates up', text)).toBe(
      'The central bank raised interest rates by half a point on Tuesday, its largest increase in two decades.',
    );
  });

  it('summarize() - adds the second sentence when the lead is very short', () => {
    expect(summarize('Storm', 'Storm hits coast. Thousands are without power tonight. Repairs may take days.')).toBe(
      'Storm hits coast. Thousands are without power tonight.',
    );
  });

  it('summarize() - does not split after abbreviations', () => {
    const text = 'Dr. Jones told the U.S. Senate on Monday that the vaccine trial had met all of its goals. More follows.';
    expect(summarize('Trial', text)).toBe('Dr. Jones told the U.S. Senate on Monday that the vaccine trial had met all of its goals.');
  });

  it('summarize() - collapses whitespace', () => {
    expect(summarize('T', '  Rain\n\n  is   expected\tall week.  ')).toBe('Rain is expected all week.');
  });

  it('summarize() - cuts a long lead at a word boundary with an ellipsis', () => {
    const text = `${'The committee discussed '.repeat(20)}the budget. Next sentence.`;
    const summary = summarize('Budget', text);
    // Ten repeats are 240 characters; the tenth "discussed" ends right before the last space that fits.
    expect(summary).toBe(`${'The committee discussed '.repeat(10).trimEnd()}…`);
    expect(summary.length).toBe(MAX_SUMMARY_CHARS);
  });

  it('summarize() - cuts a single overlong word hard', () => {
    const summary = summarize('T', 'x'.repeat(500));
    expect(summary).toBe(`${'x'.repeat(MAX_SUMMARY_CHARS - 1)}…`);
  });

  it('summarize() - falls back to the title when the text has no words', () => {
    expect(summarize('Breaking: quake  hits', ' ... ')).toBe('Breaking: quake hits');
  });

  it('summarize() - takes an empty text as one with no words', () => {
    expect(summarize('Rates up', '')).toBe('Rates up');
    expect(extractKeywords('')).toEqual([]);
    expect(analyzeSentiment('')).toEqual({ sentiment: 'neutral', score: 0 });
  });

  it('summarize() - throws TypeError for a text that is not a string', () => {
    expect(() => summarize('T', undefined as unknown as string)).toThrow(new TypeError('Expected text to be a string, got undefined'));
  });
});

describe('extractKeywords()', () => {
  const text =
    'The central bank raised interest rates. The bank said rates could rise again, ' +
    "and the bank's governor warned of inflation. Don't panic, said 2024 2024 2024 analysts.";

  it('extractKeywords() - returns the most frequent terms, lower-cased', () => {
    expect(extractKeywords(text, 2)).toEqual(['bank', 'rates']);
  });

  it('extractKeywords() - breaks ties by first appearance', () => {
    expect(extractKeywords(text)).toEqual(['bank', 'rates', 'central', 'raised', 'interest']);
  });

  it('extractKeywords() - skips stop words, short words, numbers and contractions', () => {
    const keywords = extractKeywords(text, 100);
    for (const skipped of ['the', 'said', 'could', 'of', '2024', "don't", 'don']) expect(keywords).not.toContain(skipped);
    expect(extractKeywords('AI is on TV at 10', 5)).toEqual([]);
  });

  it('extractKeywords() - returns fewer terms when the text has fewer', () => {
    expect(extractKeywords('Volcano erupts', 5)).toEqual(['volcano', 'erupts']);
    expect(extractKeywords('', 5)).toEqual([]);
    expect(extractKeywords(text, 0)).toEqual([]);
  });

  it('extractKeywords() - keeps hyphenated terms and letters beyond ASCII', () => {
    expect(extractKeywords('Zürich rate-limited Zürich', 5)).toEqual(['zürich', 'rate-limited']);
  });

  it('extractKeywords() - throws TypeError for a count that is not an integer >= 0', () => {
    expect(() => extractKeywords(text, -1)).toThrow(new TypeError('Expected count to be an integer >= 0, got -1'));
    expect(() => extractKeywords(text, 2.5)).toThrow(TypeError);
  });
});

describe('analyzeSentiment()', () => {
  it('analyzeSentiment() - reads positive text as positive', () => {
    const result = analyzeSentiment('Profits surged and the company reported strong growth.');
    expect(result.sentiment).toBe('positive');
    expect(result.score).toBeGreaterThan(0.5);
  });

  it('analyzeSentiment() - reads negative text as negative', () => {
    const result = analyzeSentiment('The crash killed three people and injured dozens.');
    expect(result.sentiment).toBe('negative');
    expect(result.score).toBeLessThan(-0.5);
  });

  it('analyzeSentiment() - reads text without lexicon words as neutral with score 0', () => {
    expect(analyzeSentiment('The council met on Tuesday.')).toEqual({ sentiment: 'neutral', score: 0 });
    expect(analyzeSentiment('')).toEqual({ sentiment: 'neutral', score: 0 });
  });

  it('analyzeSentiment() - reads balanced text as neutral', () => {
    expect(analyzeSentiment('Good news, but also bad news.').sentiment).toBe('neutral');
  });

  it('analyzeSentiment() - flips a word after a close negator', () => {
    expect(analyzeSentiment('The results were not good.').sentiment).toBe('negative');
    expect(analyzeSentiment("The outlook isn't very bad.").sentiment).toBe('positive');
    expect(analyzeSentiment('Never a failure.').sentiment).toBe('positive');
  });

  it('analyzeSentiment() - does not carry a negator across a clause boundary', () => {
    expect(analyzeSentiment('Not today. Good results.').sentiment).toBe('positive');
  });

  it('analyzeSentiment() - keeps the score within [-1, 1]', () => {
    const positive = analyzeSentiment('good great excellent '.repeat(200));
    const negative = analyzeSentiment('bad worse worst '.repeat(200));
    expect(positive.score).toBeLessThanOrEqual(1);
    expect(positive.score).toBeGreaterThan(0.99);
    expect(negative.score).toBeGreaterThanOrEqual(-1);
    expect(negative.score).toBeLessThan(-0.99);
  });

  it('analyzeSentiment() - throws TypeError for a text that is not a string', () => {
    expect(() => analyzeSentiment(42 as unknown as string)).toThrow(new TypeError('Expected text to be a string, got 42'));
  });
});
