// The keys `serve --api-keys` and `--api-keys-file` accept. Keys are secrets: no message quotes one.
import { readFile } from 'node:fs/promises';
import { accepting, type ValueParser } from './parse-values.ts';
import { UsageError } from './usage-error.ts';
import { systemErrorText } from './stdout.ts';

/** What a header carries whole, as the vendors' keys are: printable ASCII, no spaces (as `LlmServer` takes them). */
const API_KEY = /^[\x21-\x7e]+$/;

/**
 * `K1,K2`: keys separated by commas (spaces around them ignored). Checked by {@link checkApiKeys}
 * once parsed, not here: commander's message would quote the flag's value, keys and all.
 */
export const apiKeyList: ValueParser<string[]> = accepting('keys separated by commas', (text) =>
  text
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== ''),
);

/** `--api-keys`' keys, or a {@link UsageError} that says which is wrong without quoting it. */
export function checkApiKeys(keys: readonly string[]): void {
  if (keys.length === 0) throw new UsageError('--api-keys needs at least one API key (keys separated by commas)');
  const bad = keys.findIndex((key) => !API_KEY.test(key));
  if (bad !== -1) throw new UsageError(`--api-keys: key ${bad + 1} is not an API key (printable ASCII without spaces)`);
}

/**
 * The keys of a file, one a line; blank lines and lines starting with `#` are skipped. A file that
 * cannot be read, a line that is no key, or no key at all is a {@link UsageError} naming the file.
 */
export async function readApiKeysFile(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--api-keys-file ${path}: cannot read it: ${systemErrorText(error as NodeJS.ErrnoException)}`);
  }
  const keys: string[] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const key = line.trim();
    if (key === '' || key.startsWith('#')) continue;
    if (!API_KEY.test(key)) {
      throw new UsageError(`--api-keys-file ${path}: line ${index + 1} is not an API key (printable ASCII without spaces, one key a line)`);
    }
    keys.push(key);
  }
  if (keys.length === 0)
    throw new UsageError(`--api-keys-file ${path} holds no API key (one a line; blank lines and # comments are skipped)`);
  return keys;
}
