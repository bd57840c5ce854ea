import { readAnswer } from '../../provider/answer.ts';
import {
  MalformedOutputError,
  RefusalError,
  TruncatedOutputError,
  type LlmRequest,
  type LlmResponse,
  type TokenUsage,
} from '../../provider/provider.ts';
import { answerFacts, usageOf } from '../http-api.ts';
import type { ResponseMeta } from '../sdk-wire.ts';

/** Why a candidate stopped, when it means the model would not answer: a safety or policy filter. */
const REFUSED: ReadonlySet<unknown> = new Set(['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII']);

interface GeminiPart {
  readonly text?: unknown;
  /** A thought summary, not the answer. */
  readonly thought?: unknown;
}

interface GeminiResponse {
  readonly candidates?: readonly {
    readonly content?: { readonly parts?: readonly (GeminiPart | null)[] } | null;
    readonly finishReason?: unknown;
  }[];
  readonly promptFeedback?: { readonly blockReason?: unknown } | null;
  readonly usageMetadata?: Readonly<Record<string, unknown>> | null;
  readonly modelVersion?: unknown;
  readonly responseId?: unknown;
}

/**
 * A `GenerateContentResponse` read as the answer to `request` — a live call's body or a batch
 * row's `response`. The answer is read only when the first candidate finished (`STOP`):
 * `MAX_TOKENS` is a `TruncatedOutputError`; `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT` (and
 * `BLOCKLIST`, `SPII`), or a prompt blocked before any candidate (`promptFeedback.blockReason`), a
 * `RefusalError`; the text of its parts (thoughts aside) is checked against the schema again.
 * Trusts nothing of the shape.
 */
export async function decodeGemini(request: LlmRequest, body: object, meta: ResponseMeta, maxOutputTokens: number): Promise<LlmResponse> {
  const response = body as GeminiResponse;
  const { headers } = meta;
  const usage = usageOfMetadata(response?.usageMetadata);
  // No status on these: the request succeeded, its answer did not (and cost what it used).
  const failed = { headers, usage };
  const candidates: readonly unknown[] = Array.isArray(response?.candidates) ? response.candidates : [];
  const candidate = candidates[0] as NonNullable<GeminiResponse['candidates']>[number] | undefined;
  if (candidate === undefined || candidate === null) {
    const blocked = response?.promptFeedback?.blockReason;
    if (blocked !== undefined && blocked !== null) throw new RefusalError(`the prompt was blocked (${String(blocked)})`, failed);
    throw new MalformedOutputError('the response has no candidate', failed);
  }
  const reason = candidate.finishReason;
  if (reason === 'MAX_TOKENS')
    throw new TruncatedOutputError(`the answer was cut off (MAX_TOKENS; maxOutputTokens ${maxOutputTokens})`, failed);
  if (REFUSED.has(reason)) throw new RefusalError(`the model stopped the answer (${String(reason)})`, failed);
  if (reason !== undefined && reason !== 'STOP') throw new MalformedOutputError(`the answer stopped with ${String(reason)}`, failed);
  const parts: readonly unknown[] = Array.isArray(candidate.content?.parts) ? candidate.content.parts : [];
  let text = '';
  for (const part of parts) {
    const { text: piece, thought } = (part ?? {}) as GeminiPart;
    if (thought !== true && typeof piece === 'string') text += piece;
  }
  const output = await readAnswer(request, text, failed);
  const finishReasons = candidates.map((each) => (each as { finishReason?: unknown } | null)?.finishReason);
  return { output, usage, headers, ...answerFacts(response.modelVersion, response.responseId, finishReasons) };
}

/**
 * Gemini's usage as the usage type counts it: `promptTokenCount` holds the cached tokens
 * (`cachedContentTokenCount`); the output is the answer's tokens and the thinking's
 * (`candidatesTokenCount` + `thoughtsTokenCount`), both billed at the output price. Counts of 0
 * are left out of Google's JSON.
 */
function usageOfMetadata(metadata: Readonly<Record<string, unknown>> | null | undefined): TokenUsage | undefined {
  if (metadata === undefined || metadata === null) return undefined;
  const count = (value: unknown) => (value === undefined ? 0 : value);
  const candidates = count(metadata.candidatesTokenCount);
  const thoughts = count(metadata.thoughtsTokenCount);
  const output = typeof candidates === 'number' && typeof thoughts === 'number' ? candidates + thoughts : undefined;
  return usageOf(count(metadata.promptTokenCount), output, { read: metadata.cachedContentTokenCount });
}
