import { isRateLimitError, isServerError, isTimeoutError } from '../provider/provider.ts';
import { SchemaError } from '../provider/schema-validators.ts';
import { FAILURE_PROFILES, type FailureProfile, type ProfileName } from '../simulator/simulated.ts';
import { type ChatApi, type Failure, isInvalidRequestError } from '../vendors/serve/chat-api.ts';
import { Refusal } from '../vendors/serve/exchange.ts';

/** A request the API refused as it stands, or a schema it cannot answer, as the 400 that says so. */
export function asRefusal(api: ChatApi, error: unknown): Refusal {
  if (isInvalidRequestError(error)) {
    return new Refusal({ kind: 'invalid-request', message: error.message, param: error.param, code: error.code });
  }
  if (error instanceof SchemaError) {
    return new Refusal({ kind: 'invalid-request', param: api.schemaParam, message: `Invalid schema: ${error.message}` });
  }
  throw error;
}

/** The simulated provider's failure as the server answers it; undefined for anything else. */
export function simulatedFailure(error: unknown): Failure | undefined {
  if (isRateLimitError(error)) {
    return { kind: 'rate-limited', limit: 'requests', message: 'The server is receiving too many requests: please try again later.' };
  }
  if (isServerError(error)) return { kind: 'overloaded', message: `The server is overloaded or down: ${error.message}.` };
  if (isTimeoutError(error)) return { kind: 'timeout', message: 'The request timed out before an answer was ready.' };
  return undefined;
}

/**
 * The failures of a batch's rows: whatever the profile would have failed live (a 429, a 503, a
 * hang) fails the row with a 5xx — a batch has its own queue, not a rate limit, and no client waits on a hang.
 */
export function rowFailures(profile: ProfileName | FailureProfile | undefined): FailureProfile {
  const { rateLimitedProbability, serverErrorProbability, hangProbability } =
    typeof profile === 'object' ? profile : FAILURE_PROFILES[profile ?? 'default'];
  return {
    rateLimitedProbability: 0,
    serverErrorProbability: rateLimitedProbability + serverErrorProbability + hangProbability,
    hangProbability: 0,
  };
}
