/** A JSON Schema, as a task states what its answer must fit: an object at the root (OpenAI's structured output and Anthropic's tools take no other). */
export type JsonSchema = Readonly<Record<string, unknown>>;

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
