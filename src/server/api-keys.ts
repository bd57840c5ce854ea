/** Printable ASCII without spaces: what a header carries whole, as the vendors' keys are. */
const API_KEY = /^[\x21-\x7e]+$/;

/** The keys are secrets: what is wrong with them is said by type and length, never by the key. */
export function checkApiKeys(apiKeys: unknown): void {
  if (!Array.isArray(apiKeys) || apiKeys.length === 0) {
    throw new TypeError(
      `Expected apiKeys to be a non-empty array of API keys, got ${Array.isArray(apiKeys) ? 'an empty one' : typeof apiKeys}`,
    );
  }
  apiKeys.forEach((key, index) => {
    if (typeof key !== 'string' || !API_KEY.test(key)) {
      const got = typeof key === 'string' ? `a string of ${key.length} characters` : typeof key;
      throw new TypeError(`Expected apiKeys[${index}] to be printable ASCII without spaces, got ${got}`);
    }
  });
}
