import type { JsonSchema } from '../provider/json-schema.ts';
import { isRecord } from '../vendors/serve/chat-api.ts';

/**
 * A JSON schema the prompt gives for the answer, in a fenced ```json block (LangChain's format
 * instructions, and how JSON mode is meant to be told what to write): the last block that parses
 * as a schema of an object. Undefined when there is none.
 */
export function schemaInPrompt(prompt: string): JsonSchema | undefined {
  const blocks = [...prompt.matchAll(/```(?:json)?\s*\n([\s\S]*?)\n\s*```/g)].map((match) => match[1]!);
  for (const block of blocks.reverse()) {
    try {
      const parsed: unknown = JSON.parse(block);
      if (isRecord(parsed) && (parsed.type === 'object' || isRecord(parsed.properties))) return parsed as JsonSchema;
    } catch {
      // Not JSON: an example, perhaps; the next block may be the schema.
    }
  }
  return undefined;
}
