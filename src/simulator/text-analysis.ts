/**
 * Cheap, deterministic stand-ins for what an LLM would answer about an article: a lead-sentence
 * summary, frequency keywords and a lexicon sentiment. They let the simulated provider return
 * output that means something (a test or a demo can check it) without any model.
 *
 * All functions are pure: same text in, same answer out.
 */

import { checkInteger, checkString } from '../validation/checks.ts';

/** A text's sentiment, as the built-in sentiment task answers it. */
export type Sentiment = 'positive' | 'negative' | 'neutral';

/** Summaries longer than this are cut at a word boundary and end with an ellipsis. */
export const MAX_SUMMARY_CHARS = 240;

/** A lead sentence shorter than this is followed by the next one: on its own it says too little. */
const SHORT_LEAD_CHARS = 80;

/** Words shorter than this are never keywords: they are almost all function words or noise. */
const MIN_KEYWORD_CHARS = 3;

/** |score| below this reads as neutral: a stray "good" in a long mixed text is no verdict. */
const NEUTRAL_BAND = 0.2;

/** How many words back a negator still flips a sentiment word ("not very good"). */
const NEGATION_WINDOW_WORDS = 3;

// Abbreviations whose full stop does not end a sentence ("Dr. Smith said").
// biome-ignore format: a word list reads best packed
const ABBREVIATIONS = new Set([
  'mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'vs', 'etc', 'inc', 'ltd', 'co', 'corp', 'gov',
  'gen', 'sen', 'rep', 'no', 'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct',
  'nov', 'dec', 'e.g', 'i.e', 'u.s', 'u.k', 'u.n', 'a.m', 'p.m',
]);

// biome-ignore format: a word list reads best packed
const STOP_WORDS = new Set([
  'a', 'about', 'above', 'after', 'again', 'against', 'all', 'also', 'am', 'an', 'and', 'any', 'are',
  'around', 'as', 'at', 'be', 'because', 'been', 'before', 'being', 'below', 'between', 'both', 'but',
  'by', 'can', 'could', 'did', 'do', 'does', 'doing', 'down', 'during', 'each', 'even', 'ever', 'few',
  'for', 'from', 'further', 'had', 'has', 'have', 'having', 'he', 'her', 'here', 'hers', 'herself',
  'him', 'himself', 'his', 'how', 'however', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'itself',
  'just', 'last', 'like', 'made', 'make', 'many', 'may', 'me', 'might', 'more', 'most', 'much', 'must',
  'my', 'new', 'no', 'nor', 'not', 'now', 'of', 'off', 'on', 'once', 'one', 'only', 'or', 'other',
  'our', 'ours', 'out', 'over', 'own', 'said', 'same', 'say', 'says', 'she', 'should', 'since', 'so',
  'some', 'still', 'such', 'than', 'that', 'the', 'their', 'theirs', 'them', 'then', 'there', 'these',
  'they', 'this', 'those', 'through', 'to', 'too', 'two', 'under', 'until', 'up', 'upon', 'us', 'very',
  'was', 'we', 'were', 'what', 'when', 'where', 'whether', 'which', 'while', 'who', 'whom', 'whose',
  'why', 'will', 'with', 'within', 'without', 'would', 'year', 'years', 'yet', 'you', 'your', 'yours',
]);

// Base forms; `lexiconWeight` also finds simple inflections (gains, improved, rising).
// biome-ignore format: a word list reads best packed
const POSITIVE_WORDS = new Set([
  'good', 'great', 'excellent', 'positive', 'success', 'successful', 'win', 'won', 'gain', 'growth',
  'grow', 'improve', 'improvement', 'strong', 'benefit', 'boost', 'breakthrough', 'celebrate',
  'optimistic', 'progress', 'profit', 'profitable', 'rise', 'recover', 'recovery', 'rally', 'surge',
  'thrive', 'best', 'better', 'hope', 'hopeful', 'happy', 'praise', 'welcome', 'innovative',
  'agreement', 'peace', 'safe', 'stable', 'achieve', 'award', 'encourage', 'promising',
]);

// biome-ignore format: a word list reads best packed
const NEGATIVE_WORDS = new Set([
  'bad', 'poor', 'fail', 'failure', 'loss', 'lose', 'lost', 'decline', 'drop', 'fall', 'fell',
  'crash', 'crisis', 'risk', 'threat', 'threaten', 'war', 'attack', 'kill', 'death', 'dead',
  'injure', 'damage', 'disaster', 'fear', 'worry', 'warn', 'weak', 'slump', 'plunge', 'collapse',
  'scandal', 'fraud', 'corrupt', 'conflict', 'violence', 'angry', 'sad', 'worst', 'worse', 'problem',
  'shortage', 'recession', 'layoff', 'lawsuit', 'outage', 'breach',
]);

// biome-ignore format: a word list reads best packed
const NEGATORS = new Set([
  'not', 'no', 'never', 'none', 'nobody', 'nothing', 'neither', 'nor', 'without', 'hardly', 'barely',
  'cannot',
]);

export interface SentimentAnalysis {
  readonly sentiment: Sentiment;
  /** From -1 (most negative) to 1 (most positive); 0 when no lexicon word occurs. */
  readonly score: number;
}

/**
 * The article's lead: its first sentence (plus the second when the first is very short), cut to
 * {@link MAX_SUMMARY_CHARS} at a word boundary — what a news editor's one-line summary usually is.
 * Falls back to `title` when `text` has no words.
 */
export function summarize(title: string, text: string): string {
  checkString('title', title, { allowEmpty: true });
  checkString('text', text, { allowEmpty: true });
  // The lead never needs more than two sentences, and at most SHORT_LEAD + MAX_SUMMARY of them.
  const [first, second] = leadSentences(collapseWhitespace(text.slice(0, LEAD_SCAN_CHARS)));
  if (first === undefined) return truncateAtWord(collapseWhitespace(title), MAX_SUMMARY_CHARS);
  const lead = first.length < SHORT_LEAD_CHARS && second !== undefined ? `${first} ${second}` : first;
  return truncateAtWord(lead, MAX_SUMMARY_CHARS);
}

/**
 * The `count` most frequent terms of `text`, lower-cased, skipping stop words, numbers and words
 * under three letters; equally frequent terms come in order of first appearance.
 */
export function extractKeywords(text: string, count = 5): string[] {
  checkString('text', text, { allowEmpty: true });
  checkInteger('count', count, 0);
  const frequency = new Map<string, number>();
  for (const word of words(text)) {
    const term = keywordTerm(word);
    if (term !== null) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  }
  if (frequency.size <= count) return [...frequency.keys()];
  // Map iteration follows insertion order, i.e. first appearance, and Array#sort is stable.
  return [...frequency]
    .sort(([, a], [, b]) => b - a)
    .slice(0, count)
    .map(([term]) => term);
}

/**
 * Lexicon sentiment: each positive word counts +1 and each negative word -1, flipped when a
 * negator ("not", "never", "isn't") precedes it closely in the same clause. The score is
 * `(positive - negative) / (positive + negative + 1)` — the +1 keeps a single word from reading as
 * certainty — and scores within ±0.2 are neutral.
 */
export function analyzeSentiment(text: string): SentimentAnalysis {
  checkString('text', text, { allowEmpty: true });
  let positive = 0;
  let negative = 0;
  let index = 0;
  let lastNegatorIndex = -Infinity;
  const { lower, ascii } = normalize(text);
  const pattern = ascii ? WORD_OR_CLAUSE_END_ASCII : WORD_OR_CLAUSE_END;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(lower); match !== null; match = pattern.exec(lower)) {
    const token = match[0];
    if (token.length === 1 && CLAUSE_ENDS.includes(token)) {
      index = 0;
      lastNegatorIndex = -Infinity;
      continue;
    }
    const weight = lexiconWeight(token);
    if (weight !== 0) {
      const negated = index - lastNegatorIndex <= NEGATION_WINDOW_WORDS;
      if (weight > 0 !== negated) positive += 1;
      else negative += 1;
    }
    if (isNegator(token)) lastNegatorIndex = index;
    index++;
  }
  const score = (positive - negative) / (positive + negative + 1);
  const sentiment: Sentiment = Math.abs(score) < NEUTRAL_BAND ? 'neutral' : score > 0 ? 'positive' : 'negative';
  return { sentiment, score };
}

// Scanning is the simulated provider's whole cost per call, so text that is plain ASCII (most
// English news) takes patterns without Unicode property classes, several times faster.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the range is all of ASCII, control characters included
const ASCII_ONLY = /^[\x00-\x7f]*$/;
const WORD_ASCII = /[a-z0-9]+(?:['-][a-z0-9]+)*/g;
const WORD = /[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*/gu;
const CLAUSE_ENDS = '.,;:!?\n';
const WORD_OR_CLAUSE_END_ASCII = /[a-z0-9]+(?:['-][a-z0-9]+)*|[.,;:!?\n]/g;
const WORD_OR_CLAUSE_END = /[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*|[.,;:!?\n]/gu;
const SENTENCE_END_ASCII = /[.!?]+["')]*(?=\s+["'(]?[A-Z\d])/g;
const SENTENCE_END = /[.!?]+["'”’)]*(?=\s+["'“‘(]?[\p{Lu}\d])/gu;
const HAS_WORD_CHAR = /[\p{L}\p{N}]/u;
const LEAD_SCAN_CHARS = 4000;

/** Per-word verdicts are memoised: news vocabulary is small next to the number of words read. */
const MEMO_LIMIT = 50_000;
const keywordMemo = new Map<string, string | null>();
const lexiconMemo = new Map<string, number>();

function remember<V>(memo: Map<string, V>, key: string, value: V): V {
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(key, value);
  return value;
}

function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function normalize(text: string): { lower: string; ascii: boolean } {
  const lower = text.toLowerCase();
  return ASCII_ONLY.test(lower) ? { lower, ascii: true } : { lower: lower.replace(/[’‘]/g, "'"), ascii: false };
}

/**
 * The first two sentences with a letter or digit in them. A sentence ends after . ! or ? (and
 * any closing quotes) when a capital, digit or quote follows, except after an abbreviation.
 */
function leadSentences(text: string): string[] {
  const sentences: string[] = [];
  const boundary = ASCII_ONLY.test(text) ? SENTENCE_END_ASCII : SENTENCE_END;
  boundary.lastIndex = 0;
  let start = 0;
  for (let match = boundary.exec(text); match !== null && sentences.length < 2; match = boundary.exec(text)) {
    const end = match.index + match[0].length;
    if (match[0] === '.') {
      const lastWord = text.slice(text.lastIndexOf(' ', match.index - 1) + 1, match.index);
      if (ABBREVIATIONS.has(lastWord.replace(/^\P{L}+/u, '').toLowerCase())) continue;
    }
    const sentence = text.slice(start, end).trim();
    if (HAS_WORD_CHAR.test(sentence)) sentences.push(sentence);
    start = end;
  }
  const rest = text.slice(start).trim();
  if (sentences.length < 2 && rest !== '' && HAS_WORD_CHAR.test(rest)) sentences.push(rest);
  return sentences;
}

function truncateAtWord(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // Cut at the last space that leaves room for the ellipsis; a single overlong word is cut hard.
  const lastSpace = text.lastIndexOf(' ', maxChars - 1);
  const cut = lastSpace > maxChars / 2 ? text.slice(0, lastSpace) : text.slice(0, maxChars - 1);
  return `${cut.replace(/[\s,;:.\-–—]+$/, '')}…`;
}

/** Lower-cased words, apostrophes and inner hyphens kept ("isn't", "rate-limited"). */
function words(text: string): string[] {
  const { lower, ascii } = normalize(text);
  return lower.match(ascii ? WORD_ASCII : WORD) ?? [];
}

/** The keyword a word counts as, or null when it cannot be one. */
function keywordTerm(word: string): string | null {
  const known = keywordMemo.get(word);
  if (known !== undefined) return known;
  const term = word.endsWith("'s") ? word.slice(0, -2) : word;
  // Contractions ("don't") are function words; numbers say little without their unit.
  const eligible = term.length >= MIN_KEYWORD_CHARS && !STOP_WORDS.has(term) && !term.includes("'") && /^\p{L}/u.test(term);
  return remember(keywordMemo, word, eligible ? term : null);
}

function isNegator(word: string): boolean {
  return NEGATORS.has(word) || word.endsWith("n't");
}

/** +1, -1 or 0, trying the word itself and then its likely base forms. */
function lexiconWeight(word: string): number {
  const known = lexiconMemo.get(word);
  if (known !== undefined) return known;
  for (const candidate of baseForms(word)) {
    if (POSITIVE_WORDS.has(candidate)) return remember(lexiconMemo, word, 1);
    if (NEGATIVE_WORDS.has(candidate)) return remember(lexiconMemo, word, -1);
  }
  return remember(lexiconMemo, word, 0);
}

function baseForms(word: string): string[] {
  const forms = [word];
  if (word.endsWith('ies')) forms.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('es')) forms.push(word.slice(0, -2));
  if (word.endsWith('s')) forms.push(word.slice(0, -1));
  for (const suffix of ['ed', 'ing']) {
    if (!word.endsWith(suffix)) continue;
    const stem = word.slice(0, -suffix.length);
    forms.push(stem, `${stem}e`);
    // "dropped", "winning": the consonant was doubled before the suffix.
    if (/(\p{L})\1$/u.test(stem)) forms.push(stem.slice(0, -1));
  }
  return forms;
}
