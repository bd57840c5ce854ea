// Imported by the test files that drive a manual clock under token limits: token limits count with
// gpt-tokenizer, whose tables take real time to load (seconds on a loaded machine). Loaded before the
// clock is driven, so that the clock does not run past the calls' deadlines while they load.
import { beforeAll } from 'vitest';
import { loadTokenizer } from '../src/provider/token-estimate.ts';

beforeAll(async () => {
  await loadTokenizer();
});
