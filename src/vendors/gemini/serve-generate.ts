/**
 * The Gemini API's `generateContent` as `serve` speaks it: `POST /v1beta/models/{model}:generateContent`,
 * answered whole, or streamed (`:streamGenerateContent?alt=sse`, a `GenerateContentResponse` an
 * event); structured output (`generationConfig.responseMimeType: "application/json"` with
 * `responseJsonSchema`, or the OpenAPI-style `responseSchema`), `maxOutputTokens`, `stopSequences`,
 * `candidateCount`; the key in `x-goog-api-key`; errors as `google.rpc.Status` — a 429
 * `RESOURCE_EXHAUSTED` with its wait in a `RetryInfo` detail and no header, a refused key a 400
 * `INVALID_ARGUMENT` with an `ErrorInfo` `API_KEY_INVALID`.
 */

import type { JsonSchema } from '../../provider/json-schema.ts';
import {
  type AnswerShape,
  type ChatAnswer,
  type ChatApi,
  type Failure,
  type FailureKind,
  type FinishReason,
  InvalidRequestError,
  type StreamEvent,
  isRecord,
  jsonType,
} from '../serve/chat-api.ts';
import { type FieldRules, aNumber, anInteger, anObject, checkFields, read, refused } from '../serve/request-fields.ts';
import type { HeaderFormat } from '../header-fields.ts';
import { GEMINI_FIELD_WORDS } from './serve-field-words.ts';

/** What Gemini's dialect is made with from the rest of its vendor's folder: handed over, not imported. */
export interface GeminiServeParts {
  /** Gemini's rate-limit headers: none. */
  readonly headers: HeaderFormat;
}

/** Each failure's HTTP status and `google.rpc.Code` name, as the Gemini API answers them. */
const CODES: Readonly<Record<FailureKind, readonly [number, string]>> = {
  'invalid-request': [400, 'INVALID_ARGUMENT'],
  authentication: [403, 'PERMISSION_DENIED'],
  permission: [403, 'PERMISSION_DENIED'],
  // Google words an exhausted quota or credit as it words a rate limit (no RetryInfo then: no wait helps).
  'insufficient-funds': [429, 'RESOURCE_EXHAUSTED'],
  'not-found': [404, 'NOT_FOUND'],
  'too-large': [400, 'INVALID_ARGUMENT'],
  'rate-limited': [429, 'RESOURCE_EXHAUSTED'],
  'server-error': [500, 'INTERNAL'],
  overloaded: [503, 'UNAVAILABLE'],
  timeout: [504, 'DEADLINE_EXCEEDED'],
};

/** The fields of a `GenerateContentRequest`. */
const FIELDS: FieldRules = {
  model: read,
  contents: read,
  systemInstruction: read,
  generationConfig: read,
  safetySettings: read,
  tools: refused('serve calls no tools'),
  toolConfig: refused('serve calls no tools'),
  cachedContent: refused('serve keeps no cached contents: its implicit cache needs none'),
};

/** The fields of `generationConfig`. */
const CONFIG_FIELDS: FieldRules = {
  responseMimeType: read,
  responseJsonSchema: read,
  responseSchema: read,
  _responseJsonSchema: read,
  maxOutputTokens: read,
  stopSequences: read,
  candidateCount: read,
  temperature: aNumber(0, 2),
  topP: aNumber(0, 1),
  topK: anInteger(1),
  seed: anInteger(),
  presencePenalty: aNumber(),
  frequencyPenalty: aNumber(),
  thinkingConfig: anObject,
  responseModalities: read,
  responseLogprobs: refused('serve gives no log probabilities on this route', [false]),
  logprobs: refused('serve gives no log probabilities on this route'),
};

/** Gemini's implicit prompt cache: prompts of 1,024 tokens or more (Gemini 2.5 Flash's minimum). */
const MIN_CACHE_TOKENS = 1024;
const CACHE_STEP_TOKENS = 128;

/** The Gemini API's `generateContent`; `streaming`: the `streamGenerateContent` route's, which always streams. */
export function geminiGenerateApi(parts: GeminiServeParts, streaming: boolean): ChatApi {
  return {
    name: streaming ? 'gemini-stream' : 'gemini',
    headers: parts.headers,
    requestIdHeader: 'x-request-id',
    retryAfterMs: false,
    missingKeyMessage:
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    refusedKeyMessage: () => 'API key not valid. Please pass a valid API key.',
    schemaParam: 'generationConfig.responseJsonSchema',

    keyOf(headers) {
      const key = headers['x-goog-api-key'];
      return typeof key === 'string' && key.trim() !== '' ? key.trim() : undefined;
    },

    parse(body, options) {
      if (!isRecord(body)) throw new InvalidRequestError(`Invalid JSON payload received. Expected an object, got ${jsonType(body)}.`);
      checkFields(body, FIELDS, GEMINI_FIELD_WORDS);
      const model = modelOf(options.routeId, body.model);
      const { texts, lastUserText, answered } = readContents(body);
      const config = body.generationConfig ?? {};
      if (!isRecord(config)) throw GEMINI_FIELD_WORDS.wrongType('generationConfig', 'object', config);
      checkFields(config, CONFIG_FIELDS, prefixed(GEMINI_FIELD_WORDS, 'generationConfig.'));
      const promptText = texts.join('\n');
      return {
        model,
        promptText,
        lastUserText,
        ...(answered && { answered }),
        shape: answerShape(config),
        maxOutputTokens: positive(config, 'maxOutputTokens'),
        choices: positive(config, 'candidateCount'),
        stop: readStopSequences(config.stopSequences),
        stream: streaming ? { includeUsage: true } : undefined,
        cachePrefix: { kind: 'automatic', key: '', minTokens: MIN_CACHE_TOKENS, stepTokens: CACHE_STEP_TOKENS },
      };
    },

    respond(request, answer, id) {
      return {
        candidates: answer.choices.map((choice, index) => ({
          content: { parts: [{ text: choice.content }], role: 'model' },
          finishReason: finishReason(choice.finish),
          index,
        })),
        usageMetadata: usageMetadata(answer, answer.outputTokens),
        modelVersion: request.model,
        responseId: responseId(id),
      };
    },

    stream(request, answer, id) {
      const [choice] = answer.choices;
      const pieces = choice!.pieces.length === 0 ? [choice!.content] : choice!.pieces;
      let sent = 0;
      return pieces.map((piece, index): StreamEvent => {
        const last = index === pieces.length - 1;
        sent += 1;
        const chunk = {
          candidates: [
            {
              content: { parts: [{ text: piece }], role: 'model' },
              ...(last && { finishReason: finishReason(choice!.finish) }),
              index: 0,
            },
          ],
          usageMetadata: usageMetadata(answer, last ? answer.outputTokens : sent),
          modelVersion: request.model,
          responseId: responseId(id),
        };
        return { data: JSON.stringify(chunk), tokens: 1 };
      });
    },

    streamFailure(failure) {
      return { data: JSON.stringify(errorBody(failure)), tokens: 0 };
    },

    fail(failure, _requestId, retryAfterMs) {
      return { status: statusOf(failure), body: errorBody(failure, retryAfterMs) };
    },

    models(ids) {
      return { models: ids.map(modelObject) };
    },

    model: modelObject,
  };
}

/** The model the request asks: the path's (`models/{model}:generateContent`), else the body's (a batch row's `models/…`). */
function modelOf(routeId: string | undefined, model: unknown): string {
  if (routeId !== undefined && routeId !== '') return routeId;
  if (model === undefined || model === null) return 'gemini';
  if (typeof model !== 'string' || model === '') throw GEMINI_FIELD_WORDS.wrongType('model', 'string', model);
  return model.replace(/^models\//, '');
}

/** A refused key is a 400 (`ErrorInfo` `API_KEY_INVALID`), as Gemini answers one; a missing key a 403. */
function statusOf(failure: Failure): number {
  return failure.kind === 'authentication' && failure.code !== undefined ? 400 : CODES[failure.kind][0];
}

/** A failure as `google.rpc.Status`, with the details Gemini adds: `ErrorInfo` for a refused key, `RetryInfo` and `QuotaFailure` for a 429. */
export function errorBody(failure: Failure, retryAfterMs?: number): { error: Record<string, unknown> } {
  const code = statusOf(failure);
  const refusedKey = failure.kind === 'authentication' && failure.code !== undefined;
  const status = refusedKey ? 'INVALID_ARGUMENT' : CODES[failure.kind][1];
  const details: Record<string, unknown>[] = [];
  if (refusedKey) {
    details.push({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'API_KEY_INVALID',
      domain: 'googleapis.com',
      metadata: { service: 'generativelanguage.googleapis.com' },
    });
  }
  if (failure.kind === 'rate-limited') {
    const metric = failure.limit === 'tokens' ? 'generate_content_input_token_count' : 'generate_content_requests';
    details.push({
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [{ quotaMetric: `generativelanguage.googleapis.com/${metric}`, quotaId: `${metric}_per_minute` }],
    });
    if (retryAfterMs !== undefined)
      details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: durationText(retryAfterMs) });
  }
  return { error: { code, message: failure.message, status, ...(details.length > 0 && { details }) } };
}

/** A wait as a `google.protobuf.Duration` in JSON, rounded up to the ms: `"1.5s"`, `"30s"`. */
export function durationText(ms: number): string {
  return `${Math.ceil(ms) / 1000}s`;
}

function modelObject(id: string): unknown {
  return {
    name: `models/${id}`,
    version: '001',
    displayName: id,
    inputTokenLimit: 1_048_576,
    outputTokenLimit: 65_536,
    supportedGenerationMethods: ['generateContent', 'countTokens', 'batchGenerateContent'],
  };
}

function usageMetadata(answer: ChatAnswer, outputTokens: number) {
  const cached = answer.cacheReadTokens ?? 0;
  return {
    promptTokenCount: answer.inputTokens,
    candidatesTokenCount: outputTokens,
    totalTokenCount: answer.inputTokens + outputTokens,
    ...(cached > 0 && { cachedContentTokenCount: cached }),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: answer.inputTokens }],
  };
}

const responseId = (id: string) => id.slice(0, 22);

function finishReason(finish: FinishReason): string {
  return finish === 'length' ? 'MAX_TOKENS' : 'STOP';
}

/** The texts of the system instruction and of every turn; the last user turn's; whether the model has spoken. */
function readContents(body: Record<string, unknown>): { texts: string[]; lastUserText: string; answered: boolean } {
  const { contents, systemInstruction } = body;
  if (contents === undefined || contents === null)
    throw new InvalidRequestError('* GenerateContentRequest.contents: contents is not specified', 'contents');
  if (!Array.isArray(contents)) throw GEMINI_FIELD_WORDS.wrongType('contents', 'array', contents);
  if (contents.length === 0) throw new InvalidRequestError('* GenerateContentRequest.contents: contents is not specified', 'contents');
  const texts = systemInstruction === undefined || systemInstruction === null ? [] : [partsText(systemInstruction, 'systemInstruction')];
  let lastUserText = '';
  let answered = false;
  contents.forEach((content: unknown, index) => {
    const where = `contents[${index}]`;
    if (!isRecord(content)) throw GEMINI_FIELD_WORDS.wrongType(where, 'object', content);
    const role = content.role ?? 'user';
    if (role !== 'user' && role !== 'model') throw new InvalidRequestError(`Please use a valid role: user, model.`, `${where}.role`);
    const text = partsText(content, where);
    texts.push(text);
    if (role === 'user') lastUserText = text;
    else answered = true;
  });
  return { texts, lastUserText, answered };
}

/** The text of a `Content`'s parts. */
function partsText(content: unknown, where: string): string {
  if (!isRecord(content)) throw GEMINI_FIELD_WORDS.wrongType(where, 'object', content);
  const { parts } = content;
  if (!Array.isArray(parts) || parts.length === 0) {
    throw new InvalidRequestError(`* GenerateContentRequest.${where}.parts: contents.parts must not be empty.`, `${where}.parts`);
  }
  return parts
    .map((part: unknown, index) => {
      if (!isRecord(part)) throw GEMINI_FIELD_WORDS.wrongType(`${where}.parts[${index}]`, 'object', part);
      if (part.text !== undefined && typeof part.text !== 'string')
        throw GEMINI_FIELD_WORDS.wrongType(`${where}.parts[${index}].text`, 'string', part.text);
      return typeof part.text === 'string' && part.thought !== true ? part.text : '';
    })
    .join('');
}

/**
 * JSON fitting `responseJsonSchema` (or the OpenAPI-style `responseSchema`, its types upper-case)
 * when the answer is to be JSON; any JSON object without a schema; text otherwise.
 */
function answerShape(config: Record<string, unknown>): AnswerShape {
  const type = config.responseMimeType ?? 'text/plain';
  const schema = config.responseJsonSchema ?? config._responseJsonSchema ?? config.responseSchema;
  if (type !== 'text/plain' && type !== 'application/json' && type !== 'text/x.enum') {
    throw new InvalidRequestError(
      `* GenerateContentRequest.generationConfig.response_mime_type: allowed mimetypes are \`text/plain\`, \`application/json\`, \`application/xml\`, \`application/yaml\` and \`text/x.enum\`.`,
      'generationConfig.responseMimeType',
    );
  }
  if (schema !== undefined && schema !== null && type !== 'application/json') {
    throw new InvalidRequestError(
      '* GenerateContentRequest.generationConfig.response_mime_type: a response schema needs responseMimeType application/json',
      'generationConfig.responseMimeType',
    );
  }
  if (type !== 'application/json') return { kind: 'text' };
  if (schema === undefined || schema === null) return { kind: 'json-object' };
  if (!isRecord(schema)) throw GEMINI_FIELD_WORDS.wrongType('generationConfig.responseJsonSchema', 'object', schema);
  const json = config.responseSchema === schema ? lowerCaseTypes(schema) : schema;
  // Gemini's structured output has no name: a schema's title is its name, as a client's task names it.
  const name = typeof schema.title === 'string' && schema.title !== '' ? schema.title : 'output';
  return { kind: 'schema', name, schema: json as JsonSchema };
}

/** An OpenAPI-style `Schema` (`type: "OBJECT"`) as JSON Schema (`type: "object"`). */
function lowerCaseTypes(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(lowerCaseTypes);
  if (!isRecord(schema)) return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === 'type' && typeof value === 'string' ? value.toLowerCase() : lowerCaseTypes(value),
    ]),
  );
}

function positive(config: Record<string, unknown>, field: string): number | undefined {
  const value = config[field];
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || (value as number) < 1) {
    throw new InvalidRequestError(
      `* GenerateContentRequest.generationConfig.${field}: must be a positive integer, got ${JSON.stringify(value)}`,
      `generationConfig.${field}`,
    );
  }
  return value as number;
}

function readStopSequences(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((sequence) => typeof sequence !== 'string')) {
    throw GEMINI_FIELD_WORDS.wrongType('generationConfig.stopSequences', 'array', value);
  }
  return value as string[];
}

/** Field words with the fields named under `prefix`. */
function prefixed(words: typeof GEMINI_FIELD_WORDS, prefix: string): typeof GEMINI_FIELD_WORDS {
  return {
    unknown: (field) => words.unknown(`${prefix}${field}`),
    wrongType: (field, expected, value) => words.wrongType(`${prefix}${field}`, expected, value),
    outOfRange: (field, bound, limit, value) => words.outOfRange(`${prefix}${field}`, bound, limit, value),
    notOneOf: (field, values, value) => words.notOneOf(`${prefix}${field}`, values, value),
    refused: (field, why) => words.refused(`${prefix}${field}`, why),
  };
}
