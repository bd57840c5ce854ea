/**
 * Made-up but plausible news articles, generated on demand from a seed: a stream that never holds
 * the whole list, so a source of ten million articles costs the memory of one.
 */
import { checkInteger } from '../validation/checks.ts';
import type { Article } from './article.ts';
import {
  CLOSINGS,
  LEADS,
  PEOPLE,
  PLACES,
  QUOTES,
  SOURCES,
  SOURCE_SLUGS,
  TITLES,
  TONE_BY_TENTH,
  TOPICS,
  DAYS,
  WHENS,
  type Slots,
} from './generated-words.ts';

/** A generated article: it always has its text, a URL and a source. */
export interface GeneratedArticle extends Article {
  /** The article's text, words drawn from the seed. */
  readonly content: string;
  /** A made-up address. */
  readonly url: string;
  /** A made-up publication. */
  readonly source: string;
}

/** What `generateArticles()` takes besides the count: the seed that picks the articles. */
export interface GenerateArticlesOptions {
  /**
   * Picks the articles; the same seed always gives the same articles. Any safe integer. The
   * default makes a run without a seed reproducible too.
   * @default 1
   */
  readonly seed?: number;
}

/**
 * `count` made-up but plausible news articles with ids "1" … `String(count)`: a title and a body
 * of 3–6 sentences on one of several topics, in a positive, negative or neutral tone (so that
 * sentiment analysis has varied answers to give), with a `source` and a `url`.
 *
 * Lazy: each article is built when the iterator asks for it, from fixed word pools by index
 * arithmetic, so `count` may be huge at O(1) memory and each article costs about a microsecond.
 * Article `i` depends only on `seed` and `i`, never on `count`: `generateArticles(10)` is a prefix
 * of `generateArticles(1000)`. The returned iterable can be iterated again and starts over.
 *
 * Throws `TypeError` if `count` is not a non-negative safe integer or `seed` not a safe integer.
 */
export function generateArticles(count: number, options: GenerateArticlesOptions = {}): Iterable<GeneratedArticle> {
  checkInteger('count', count, 0);
  const seedHash = hashSeed(options.seed);
  return {
    *[Symbol.iterator]() {
      for (let index = 1; index <= count; index += 1) yield makeArticle(seedHash, index);
    },
  };
}

/**
 * Article number `index` (1-based, id `String(index)`) of every `generateArticles(count, options)`
 * with `count >= index`, made on its own: to check a results file against generated input without
 * generating everything before it.
 */
export function generatedArticle(index: number, options: GenerateArticlesOptions = {}): GeneratedArticle {
  checkInteger('index', index, 1);
  return makeArticle(hashSeed(options.seed), index);
}

function hashSeed(seed = 1): number {
  checkInteger('seed', seed, Number.MIN_SAFE_INTEGER);
  return mix32(mix32(seed >>> 0) ^ Math.floor(seed / 0x1_0000_0000));
}

const capitalise = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

// The random stream of the article being built. Module state rather than a closure per article
// because article building is synchronous and closures were a measurable share of its cost.
let drawState = 0;

/** The next 32-bit unsigned number of the current article's stream. */
function draw(): number {
  drawState = (drawState + 0x9e3779b9) | 0;
  return mix32(drawState);
}

const pick = <T>(pool: readonly T[]): T => pool[draw() % pool.length]!;

function makeArticle(seedHash: number, index: number): GeneratedArticle {
  // Counter-based: article i's stream depends only on the seed and i, so the generator needs no
  // state beyond the index, and a prefix of a longer run is the shorter run.
  drawState = mix32(seedHash ^ mix32((index >>> 0) ^ mix32(Math.floor(index / 0x1_0000_0000))));

  const topic = pick(TOPICS);
  const tone = pick(TONE_BY_TENTH);
  const actor = pick(topic.actors);
  const project = pick(topic.projects);
  const slots: Slots = {
    actor,
    Actor: capitalise(actor),
    project,
    Project: capitalise(project),
    place: pick(PLACES),
    person: pick(PEOPLE),
    role: pick(topic.roles),
    day: pick(DAYS),
    when: pick(WHENS),
    years: 2 + (draw() % 9),
    percent: 3 + (draw() % 38),
  };
  const toneSentences = topic.sentences[tone];
  const first = draw() % toneSentences.length;
  const sentenceCount = 3 + (draw() % 4);

  // Fixed order, truncated to the sentence count, so a body reads like a news story at any length:
  // lead, the topic's main point, then a quote, background, a second point; always a closing line.
  let content = `${pick(LEADS[tone])(slots)} ${toneSentences[first]!(slots)}`;
  if (sentenceCount >= 4) content += ` ${pick(QUOTES[tone])(slots)}`;
  if (sentenceCount >= 5) {
    const background = topic.sentences.neutral;
    // A neutral story's main points come from this same pool: take the one it has not used.
    const at = tone === 'neutral' ? (first + 2) % background.length : draw() % background.length;
    content += ` ${background[at]!(slots)}`;
  }
  if (sentenceCount >= 6) content += ` ${toneSentences[(first + 1) % toneSentences.length]!(slots)}`;
  content += ` ${pick(CLOSINGS)(slots)}`;

  const sourceIndex = draw() % SOURCES.length;
  const id = String(index);
  return {
    id,
    title: pick(TITLES[tone])(slots),
    content,
    url: `https://${SOURCE_SLUGS[sourceIndex]}.example.com/${topic.name}/${id}`,
    source: SOURCES[sourceIndex]!,
  };
}

/** A 32-bit integer hash with good avalanche (the "lowbias32" finaliser); returns an unsigned int. */
function mix32(value: number): number {
  let x = value | 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}
