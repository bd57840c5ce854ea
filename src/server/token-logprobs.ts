/**
 * Log probabilities for an answer's tokens, plausible rather than measured: a simulation samples
 * nothing, so each token gets the confidence a model typically shows — most tokens near certain, a
 * few in doubt — drawn from the token and its place, the same for the same answer every time. The
 * alternatives share what the chosen token leaves, in falling order, so no distribution sums past 1.
 */

import { createRandom } from '../simulator/random.ts';
import type { TokenLogprob } from '../vendors/serve/chat-api.ts';

/** Tokens that stand in for the alternatives a model weighed: common ones, as a real top list shows. */
const ALTERNATIVES = [' the', ',', '.', ' a', ' and', ' of', ' to', ' in', ' is', ' that', ' it', ' for', ' on', ' with', ' as', ' was'];

/** Every token's log probability with the `top` likeliest tokens at its place (the token itself first when it is the likeliest). */
export function tokenLogprobs(pieces: readonly string[], top: number): TokenLogprob[] {
  const encoder = new TextEncoder();
  const bytes = (token: string) => [...encoder.encode(token)];
  return pieces.map((token, index) => {
    const random = createRandom(hash(token) ^ index);
    // Nine tokens in ten are all but certain; the tenth is a closer call.
    const probability = random() < 0.9 ? 0.9 + 0.0999 * random() : 0.35 + 0.5 * random();
    const logprob = Math.log(probability);
    const others = ALTERNATIVES.filter((candidate) => candidate !== token);
    let left = 1 - probability;
    const alternatives = [];
    for (let rank = 0; rank < top - 1 && rank < others.length; rank++) {
      const share = left * (0.4 + 0.2 * random());
      left -= share;
      const candidate = others[(index + rank) % others.length]!;
      alternatives.push({ token: candidate, logprob: Math.log(share), bytes: bytes(candidate) });
    }
    const chosen = { token, logprob, bytes: bytes(token) };
    return { token, logprob, bytes: chosen.bytes, top: top === 0 ? [] : [chosen, ...alternatives] };
  });
}

/** A 32-bit FNV-1a hash: a seed per token text. */
function hash(text: string): number {
  let value = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    value ^= text.charCodeAt(i);
    value = Math.imul(value, 0x01000193);
  }
  return value | 0;
}
