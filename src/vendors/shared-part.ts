/**
 * Parts of a request body that many bodies share — a task's response format, its tool — marked so
 * that a body's JSON can take their JSON made once rather than again for every row of a batch.
 */
const sharedParts = new WeakSet<object>();

/** Marks `part` as shared by many bodies (the same object in each) and returns it. */
export function sharedPart<T extends object>(part: T): T {
  sharedParts.add(part);
  return part;
}

/**
 * Each shared part made by one task of an encoder, by the object its identity hangs on (the task's
 * schema): made again only when the task's name or description differ from the last made.
 */
export class SharedParts<T extends object> {
  readonly #made = new WeakMap<object, { readonly name: string; readonly description: string | undefined; readonly part: T }>();

  /** The part for `owner` named `name` with `description`, made by `make` the first time. */
  get(owner: object, name: string, description: string | undefined, make: () => T): T {
    const known = this.#made.get(owner);
    if (known !== undefined && known.name === name && known.description === description) return known.part;
    const part = sharedPart(make());
    this.#made.set(owner, { name, description, part });
    return part;
  }
}

/**
 * `JSON.stringify(body)` for a plain object, with the JSON of each shared part at its top level
 * taken from `made` (made there the first time): the same text, without serializing a task's schema
 * for every row. `made` lives as long as the caller's run, so a part changed in place after it is
 * not served stale by the next run.
 */
export function bodyJsonOf(body: object, made: Map<object, string>): string {
  let json = '';
  for (const key of Object.keys(body)) {
    const value = (body as Record<string, unknown>)[key];
    let part: string | undefined;
    if (typeof value === 'object' && value !== null && sharedParts.has(value)) {
      part = made.get(value);
      if (part === undefined) {
        part = JSON.stringify(value);
        made.set(value, part);
      }
    } else part = JSON.stringify(value);
    // What JSON.stringify leaves out of an object: undefined, functions, symbols.
    if (part === undefined) continue;
    json += `${json === '' ? '{' : ','}${JSON.stringify(key)}:${part}`;
  }
  return json === '' ? '{}' : `${json}}`;
}
