import type { ErrorBody } from '../http-api.ts';

/** OpenAI's error body: `{ error: { message, type, code } }` (the SDK hands over the inner object). */
export function readOpenAiErrorBody(error: unknown): ErrorBody {
  const { code, type, message } = (error ?? {}) as Record<string, unknown>;
  return { codes: [code, type], message };
}
