import type { ErrorBody } from '../http-api.ts';

/** The `ErrorInfo` reasons of a key Google refuses with a 400 rather than a 401. */
const REFUSED_KEY_REASONS: ReadonlySet<unknown> = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED', 'API_KEY_SERVICE_BLOCKED']);

const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

/**
 * Google's error body (`google.rpc.Status` as JSON): `{ error: { code, message, status, details } }`.
 * Its codes are the status (`RESOURCE_EXHAUSTED`, `INVALID_ARGUMENT`) and an `ErrorInfo` detail's
 * `reason`; a key refused with a 400 (`API_KEY_INVALID`) or a 403 `PERMISSION_DENIED` means a
 * refused key; a `RetryInfo` detail's `retryDelay` (`"1.5s"`) is the wait Gemini asks for, which it
 * sends in no header.
 */
export function readGeminiErrorBody(body: unknown): ErrorBody {
  const error = (body as { error?: unknown } | null)?.error;
  const { status, message, details } = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  let reason: unknown;
  let retryAfterMs: number | undefined;
  for (const detail of Array.isArray(details) ? details : []) {
    const { '@type': type, reason: said, retryDelay } = (detail ?? {}) as Record<string, unknown>;
    if (type === ERROR_INFO) reason ??= said;
    else if (type === RETRY_INFO) retryAfterMs ??= durationMs(retryDelay);
  }
  const means =
    REFUSED_KEY_REASONS.has(reason) || status === 'PERMISSION_DENIED' || status === 'UNAUTHENTICATED'
      ? 'refused-key'
      : status === 'RESOURCE_EXHAUSTED'
        ? 'rate-limited'
        : undefined;
  return {
    codes: reason === undefined ? [status] : [reason, status],
    message,
    ...(means !== undefined && { means }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
  };
}

/** A `google.protobuf.Duration` as JSON (`"1.5s"`, `"30s"`, `"0.000001s"`) in ms; undefined for anything else. */
export function durationMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{1,12})(?:\.(\d{1,9}))?s$/.exec(value);
  if (match === null) return undefined;
  return Number(match[1]) * 1000 + Number(`0.${match[2] ?? '0'}`) * 1000;
}
