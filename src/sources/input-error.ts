/** A bad line of an input file, as `--skip-invalid` reports it: where, and why. */
export interface InputIssue {
  /** The file's path, or the name given to a stream (`stdin`). */
  readonly path: string;
  /** The line it is on: a CSV record's or a JSON array element's first line. */
  readonly line: number;
  /** What is wrong with it: `missing "id"`, `invalid JSON (…)`. */
  readonly reason: string;
}

/**
 * An input file that cannot be used. The message is `${path}:${line}: ${reason}` for a bad line
 * and `${path}: ${reason}` when the file as a whole is unreadable (`line` undefined); `cause`
 * holds the underlying system error, if any.
 */
export class InputError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'InputError';
  /** The input file, as given (`-` for standard input). */
  readonly path: string;
  /** The line of the problem, when it has one. */
  readonly line: number | undefined;
  /** What is wrong, in a phrase. */
  readonly reason: string;

  constructor(issue: { path: string; line?: number | undefined; reason: string }, options?: ErrorOptions) {
    const { path, line, reason } = issue;
    super(line === undefined ? `${path}: ${reason}` : `${path}:${line}: ${reason}`, options);
    this.path = path;
    this.line = line;
    this.reason = reason;
  }
}
