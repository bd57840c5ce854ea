/** One unit of work: a news article (or any record a run's tasks read). `id` is unique within a run. */
export interface Article {
  /** The article's id, unique in a run: what its result and `--resume` know it by. */
  readonly id: string;
  /** "" when the input has none. */
  readonly title: string;
  /** The article's text, when it has one: what the built-in tasks read. */
  readonly content?: string | undefined;
  /** The article's address. */
  readonly url?: string | undefined;
  /** Where the article comes from (a publication, a feed). */
  readonly source?: string | undefined;
  /**
   * Every field of the input line, for the tasks' placeholders (`{{meta.author}}`).
   * @default the fields above
   */
  readonly fields?: Readonly<Record<string, unknown>> | undefined;
  /**
   * Outputs an earlier run already has for this article, by task: those tasks are not run again
   * (`--resume` after a failure in a later task).
   * @default none
   */
  readonly outputs?: Readonly<Record<string, unknown>> | undefined;
}
