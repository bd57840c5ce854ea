/** One unit of work: a news article. `id` is unique within a run. */
export interface Article {
  readonly id: string;
  readonly title: string;
  readonly content: string;
  readonly url?: string;
  readonly source?: string;
}
