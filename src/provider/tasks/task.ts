import type { LlmOutput, LlmRequest, TaskName } from '../provider.ts';

/** A JSON Schema (the subset OpenAI's strict structured outputs and Anthropic's tool input schemas accept). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/**
 * One LLM task as a real provider is asked it: the instruction in front of the article, the JSON
 * schema the answer must fit (OpenAI's `response_format`, Anthropic's forced tool), and the parse
 * of a fitting answer into the pipeline's output.
 */
export interface Task<Output extends LlmOutput = LlmOutput> {
  readonly name: TaskName;
  /** What the model is told to do, before the article. */
  readonly instruction: string;
  /** What the answer's schema (or the tool) is for, in a line. */
  readonly description: string;
  /** Strict: every property required, no others (`additionalProperties: false`). */
  readonly schema: JsonSchema;
  /**
   * The output a schema-valid answer means. Throws `MalformedOutputError` for what the schema
   * cannot say (an empty summary, a score out of range).
   */
  toOutput(answer: unknown): Output;
}

/** The prompt a provider receives for `request`: the task's instruction, the title, the article. */
export function promptFor(task: Task, request: LlmRequest): string {
  return `${task.instruction}\n\nTitle: ${request.title}\n\n${request.text}`;
}
