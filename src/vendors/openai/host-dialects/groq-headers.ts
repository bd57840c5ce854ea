import type { HeaderFormat } from '../../header-fields.ts';
import { openAiStyleHeaders } from '../rate-limit-headers.ts';
import { DAY_MS, MINUTE_MS, overWindow } from './window-scale.ts';

/**
 * Groq's rate-limit headers: OpenAI's names, `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
 * but the requests counted over a **day** (its RPD) and the tokens over a minute (its TPM); resets
 * as Go durations (`2m59.56s`, `7.66s`, `120ms`). Written by `serve --headers=groq` from its
 * per-minute quota: the day's requests at the minute's rate (what remains, what may be sent now).
 */
export const GROQ_HEADERS: HeaderFormat = openAiStyleHeaders({
  windowMs: { requests: DAY_MS, tokens: MINUTE_MS },
  writeLimit: (kind, limit) => (kind === 'requests' ? overWindow(limit, DAY_MS) : limit),
});
