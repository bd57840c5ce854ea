import type { ErrorBody } from '../http-api.ts';

/** Anthropic's error body: `{ type: "error", error: { type, message } }` (the SDK hands over all of it). */
export function readAnthropicErrorBody(body: unknown): ErrorBody {
  const { type, message } = ((body as { error?: unknown } | null)?.error ?? {}) as Record<string, unknown>;
  return { codes: [type], message };
}
