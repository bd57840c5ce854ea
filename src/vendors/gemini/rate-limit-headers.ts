import { LIMIT_KINDS } from '../../provider/rate-limit-signals.ts';
import type { HeaderFormat } from '../header-fields.ts';

/**
 * Gemini's rate-limit headers: none. Its responses say nothing of the limits, and a 429 says its
 * wait in the body (a `RetryInfo` detail, read by `readGeminiErrorBody`), not in `retry-after`:
 * written, the format leaves out even that, as Gemini does; read, it finds nothing (a proxy's IETF
 * fields and `retry-after` are still read beside it).
 */
export const GEMINI_HEADERS: HeaderFormat = {
  /** Every kind is taken, and none is said: a limit given to write is left out, as Gemini leaves its limits out. */
  kinds: LIMIT_KINDS,
  parse: () => [],
  write(headers) {
    delete headers['retry-after'];
    delete headers['retry-after-ms'];
  },
};
