/**
 * OpenAI's Chat Completions API as `serve` speaks it: `POST /v1/chat/completions`, answered whole or
 * streamed as `chat.completion.chunk` events, with `response_format` (`text`, `json_object`,
 * `json_schema`, strict mode's rules enforced), function tools, `n` choices, stop sequences and log
 * probabilities; answers and errors in OpenAI's shapes.
 */

import type { JsonSchema } from '../../provider/json-schema.ts';
import {
  type AnswerShape,
  type CachePrefix,
  type ChatAnswer,
  type ChatApi,
  type ChatRequest,
  FAILURE_STATUS,
  type Failure,
  type FinishReason,
  InvalidRequestError,
  type StreamEvent,
  type TokenLogprob,
  bearerToken,
  isRecord,
  jsonType,
  readTokenLimit,
} from '../serve/chat-api.ts';
import {
  type FieldRules,
  aBoolean,
  aNumber,
  aString,
  anInteger,
  anObject,
  checkFields,
  oneOf,
  read,
  refused,
} from '../serve/request-fields.ts';
import { OPENAI_FIELD_WORDS } from './serve-field-words.ts';
import type { HeaderFormat } from '../header-fields.ts';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];
/** OpenAI's caps: stop sequences per request, choices, alternatives per token. */
const MAX_STOP_SEQUENCES = 4;
const MAX_CHOICES = 128;
const MAX_TOP_LOGPROBS = 20;

/** Every field of a chat completion request: what serve acts on, what it takes as a sampling knob, what it refuses. */
const FIELDS: FieldRules = {
  model: read,
  messages: read,
  n: read,
  stop: read,
  stream: read,
  stream_options: read,
  max_tokens: read,
  max_completion_tokens: read,
  response_format: read,
  tools: read,
  tool_choice: read,
  logprobs: read,
  top_logprobs: read,
  temperature: aNumber(0, 2),
  top_p: aNumber(0, 1),
  frequency_penalty: aNumber(-2, 2),
  presence_penalty: aNumber(-2, 2),
  seed: anInteger(),
  user: aString,
  safety_identifier: aString,
  prompt_cache_key: aString,
  prompt_cache_retention: oneOf('in-memory', '24h'),
  metadata: anObject,
  parallel_tool_calls: aBoolean,
  service_tier: oneOf('auto', 'default', 'flex', 'scale', 'priority'),
  reasoning_effort: oneOf('none', 'minimal', 'low', 'medium', 'high', 'xhigh'),
  verbosity: oneOf('low', 'medium', 'high'),
  store: refused('is not supported by serve: it keeps no chat completions to list or retrieve. Set it to false.', [false]),
  logit_bias: refused('is not supported by serve: its answers are not sampled, so there is nothing to bias.', [{}]),
  modalities: refused('is not supported by serve: it answers in text only.', [['text']]),
  audio: refused('is not supported by serve: it answers in text only.'),
  prediction: refused('is not supported by serve: it has no predicted outputs.'),
  web_search_options: refused('is not supported by serve: it does not search the web.'),
  functions: refused("is deprecated and not supported by serve: use 'tools'."),
  function_call: refused("is deprecated and not supported by serve: use 'tool_choice'."),
};

/** A strict mode's rules: why it refuses a schema, as its 400 says it; undefined when it takes it. */
export type StrictRules = (schema: JsonSchema) => string | undefined;

/**
 * What OpenAI's dialect is made with from the rest of its vendor's folder — modules a plain run
 * loads too, handed over rather than imported, so that the dialect's chunk of the command's bundle
 * shares none of them (each shared module would cut the run's own into more chunks).
 */
export interface OpenAiServeParts {
  /** OpenAI's rate-limit headers, or those of the host `serve --headers` imitates. */
  readonly headers: HeaderFormat;
  /** What a request over the key's quota meets: 429, or (a host that queues) a wait. @default 'refuse' */
  readonly overQuota?: 'refuse' | 'queue' | undefined;
  /** The status a provider down is answered with (Groq's 498 at capacity). @default 503 */
  readonly overloadedStatus?: number | undefined;
  /** OpenAI's strict-mode rules for a schema (`response_format` and function tools marked `strict`). */
  readonly strictSchemaProblem: StrictRules;
}

/** OpenAI's Chat Completions API. */
export function openAiChatApi(parts: OpenAiServeParts): ChatApi {
  const api: ChatApi = {
    name: 'openai',
    headers: parts.headers,
    requestIdHeader: 'x-request-id',
    retryAfterMs: true,
    missingKeyMessage:
      "You didn't provide an API key. Provide it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY).",
    schemaParam: 'response_format.json_schema.schema',

    keyOf: bearerToken,

    refusedKeyMessage: (key) =>
      `Incorrect API key provided: ${maskedKey(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`,

    parse(body, options) {
      if (!isRecord(body)) throw new InvalidRequestError(`Invalid request body: expected a JSON object, but got ${jsonType(body)}.`);
      const { model, messages } = body;
      if (model === undefined) throw new InvalidRequestError('you must provide a model parameter', 'model');
      if (typeof model !== 'string' || model === '') {
        throw new InvalidRequestError(`Invalid type for 'model': expected a non-empty string, but got ${jsonType(model)}.`, 'model');
      }
      if (messages === undefined)
        throw new InvalidRequestError("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
      if (!Array.isArray(messages)) {
        throw new InvalidRequestError(
          `Invalid type for 'messages': expected an array of objects, but got ${jsonType(messages)}.`,
          'messages',
        );
      }
      if (messages.length === 0) {
        throw new InvalidRequestError(
          "Invalid 'messages': empty array. Expected an array with minimum length 1.",
          'messages',
          'empty_array',
        );
      }
      const texts: string[] = [];
      let lastUserText = '';
      let answered = false;
      messages.forEach((message, index) => {
        const where = `messages[${index}]`;
        if (!isRecord(message))
          throw new InvalidRequestError(`Invalid type for '${where}': expected an object, but got ${jsonType(message)}.`, where);
        if (typeof message.role !== 'string' || !ROLES.includes(message.role)) {
          throw new InvalidRequestError(
            `Invalid value for '${where}.role': expected one of ${ROLES.map((role) => `'${role}'`).join(', ')}.`,
            `${where}.role`,
          );
        }
        const text = contentText(message.content, `${where}.content`, message.role === 'assistant');
        texts.push(text);
        if (message.role === 'user') lastUserText = text;
        if (message.role === 'assistant') answered = true;
      });
      checkFields(body, FIELDS, OPENAI_FIELD_WORDS);
      const maxTokens = readTokenLimit(body, 'max_tokens');
      // The newer field wins when a request gives both.
      const maxOutputTokens = readTokenLimit(body, 'max_completion_tokens') ?? maxTokens;
      const last = messages.at(-1) as Record<string, unknown>;
      return {
        model,
        promptText: texts.join('\n'),
        lastUserText,
        ...(answered ? { answered } : {}),
        cachePrefix: automaticPrefix(body),
        shape: answerShape(body, last.role === 'tool', options.lenientSchemas ? undefined : parts.strictSchemaProblem),
        maxOutputTokens,
        choices: readChoices(body.n),
        stop: readStop(body.stop),
        stream: readStream(body),
        logprobs: readLogprobs(body),
      };
    },

    respond(request, answer, id) {
      const { shape } = request;
      return {
        id: `chatcmpl-${id}`,
        object: 'chat.completion',
        created: answer.createdSeconds,
        model: request.model,
        choices: answer.choices.map((choice, index) => ({
          index,
          message:
            shape.kind === 'tool'
              ? { role: 'assistant', content: null, refusal: null, tool_calls: [toolCall(shape.name, id, index, choice.content)] }
              : { role: 'assistant', content: choice.content, refusal: null },
          logprobs: choice.logprobs === undefined ? null : { content: choice.logprobs.map(logprobOf), refusal: null },
          finish_reason: finishReason(choice.finish),
        })),
        usage: usageOf(answer),
        system_fingerprint: null,
      };
    },

    stream(request, answer, id) {
      const { shape } = request;
      const includeUsage = request.stream?.includeUsage === true;
      const chunk = (choices: unknown[], usage?: unknown): string =>
        JSON.stringify({
          id: `chatcmpl-${id}`,
          object: 'chat.completion.chunk',
          created: answer.createdSeconds,
          model: request.model,
          system_fingerprint: null,
          choices,
          ...(includeUsage ? { usage: usage ?? null } : {}),
        });
      const events: StreamEvent[] = answer.choices.map((_, index) => ({
        data: chunk([
          {
            index,
            delta:
              shape.kind === 'tool'
                ? { role: 'assistant', content: null, tool_calls: [{ index: 0, ...toolCall(shape.name, id, index, '') }] }
                : { role: 'assistant', content: '', refusal: null },
            logprobs: null,
            finish_reason: null,
          },
        ]),
        tokens: 0,
      }));
      const longest = Math.max(...answer.choices.map((choice) => choice.pieces.length));
      for (let position = 0; position < longest; position++) {
        answer.choices.forEach((choice, index) => {
          const piece = choice.pieces[position];
          if (piece === undefined) return;
          const delta = shape.kind === 'tool' ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece };
          const logprob = choice.logprobs?.[position];
          events.push({
            data: chunk([
              {
                index,
                delta,
                logprobs: logprob === undefined ? null : { content: [logprobOf(logprob)], refusal: null },
                finish_reason: null,
              },
            ]),
            // The choices are generated side by side: a position is one step of the pacing, whatever their number.
            tokens: index === 0 || answer.choices[0]!.pieces[position] === undefined ? 1 : 0,
          });
        });
      }
      answer.choices.forEach((choice, index) => {
        events.push({ data: chunk([{ index, delta: {}, logprobs: null, finish_reason: finishReason(choice.finish) }]), tokens: 0 });
      });
      if (includeUsage) events.push({ data: chunk([], usageOf(answer)), tokens: 0 });
      events.push({ data: '[DONE]', tokens: 0 });
      return events;
    },

    streamFailure(failure, requestId) {
      return { data: JSON.stringify(api.fail(failure, requestId).body), tokens: 0 };
    },

    fail(failure) {
      return { status: FAILURE_STATUS[failure.kind], body: openAiErrorBody(failure) };
    },

    models(ids) {
      return { object: 'list', data: ids.map(modelObject) };
    },

    model: modelObject,
  };
  return api;
}

/** OpenAI's error body, shared with its Responses API. */
export function openAiErrorBody(failure: Failure): { error: Record<string, unknown> } {
  const type =
    failure.kind === 'rate-limited'
      ? (failure.limit ?? 'requests')
      : failure.kind === 'insufficient-funds'
        ? 'insufficient_quota'
        : failure.kind === 'overloaded' || failure.kind === 'timeout' || failure.kind === 'server-error'
          ? 'server_error'
          : 'invalid_request_error';
  const code =
    failure.code ??
    (failure.kind === 'rate-limited' ? 'rate_limit_exceeded' : failure.kind === 'insufficient-funds' ? 'insufficient_quota' : null);
  return { error: { message: failure.message, type, param: failure.param ?? null, code } };
}

/** Least length of a key whose first 3 and last 4 characters are shown: the 5 or more between stay hidden. */
const SHOWN_KEY_LENGTH = 12;

/**
 * A key as OpenAI quotes a wrong one, `sk-***…***WXYZ`: enough to tell which key was sent, not
 * enough to use it. A shorter key is all asterisks.
 */
function maskedKey(key: string): string {
  const points = Array.from(key);
  if (points.length < SHOWN_KEY_LENGTH) return '*'.repeat(points.length);
  return `${points.slice(0, 3).join('')}${'*'.repeat(points.length - 7)}${points.slice(-4).join('')}`;
}

function modelObject(id: string): unknown {
  return { id, object: 'model', created: 0, owned_by: 'news-processor' };
}

function toolCall(name: string, id: string, choice: number, args: string) {
  return { id: `call_${id.slice(0, 22)}${String(choice).padStart(2, '0')}`, type: 'function', function: { name, arguments: args } };
}

function finishReason(finish: FinishReason): string {
  return finish === 'length' ? 'length' : finish === 'tool' ? 'tool_calls' : 'stop';
}

function usageOf(answer: ChatAnswer) {
  return {
    prompt_tokens: answer.inputTokens,
    // Part of the prompt tokens, as OpenAI counts them.
    prompt_tokens_details: { cached_tokens: answer.cacheReadTokens ?? 0 },
    completion_tokens: answer.outputTokens,
    total_tokens: answer.inputTokens + answer.outputTokens,
  };
}

/** A token's log probability in OpenAI's shape, shared with its Responses API. */
export function logprobOf({ token, logprob, bytes, top }: TokenLogprob) {
  return { token, logprob, bytes, top_logprobs: top.map((alternative) => ({ ...alternative })) };
}

/** A message's text: a string, or the text of its content parts (other parts say nothing to a simulation). */
function contentText(content: unknown, where: string, mayBeNull: boolean): string {
  if (typeof content === 'string') return content;
  if ((content === null || content === undefined) && mayBeNull) return '';
  if (!Array.isArray(content))
    throw new InvalidRequestError(`Invalid type for '${where}': expected a string or an array, but got ${jsonType(content)}.`, where);
  return content
    .map((part, index) => {
      if (!isRecord(part) || typeof part.type !== 'string') {
        throw new InvalidRequestError(`Invalid '${where}[${index}]': expected an object with a type.`, `${where}[${index}]`);
      }
      return part.type === 'text' && typeof part.text === 'string' ? part.text : '';
    })
    .join('\n');
}

function readChoices(n: unknown): number {
  if (n === undefined || n === null) return 1;
  if (!Number.isInteger(n)) throw OPENAI_FIELD_WORDS.wrongType('n', 'integer', n);
  if ((n as number) < 1) throw OPENAI_FIELD_WORDS.outOfRange('n', 'min', 1, n as number);
  if ((n as number) > MAX_CHOICES) throw OPENAI_FIELD_WORDS.outOfRange('n', 'max', MAX_CHOICES, n as number);
  return n as number;
}

/** `stop`: a string or up to four, none empty. */
function readStop(stop: unknown): string[] {
  if (stop === undefined || stop === null) return [];
  const sequences = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(sequences) || sequences.some((sequence) => typeof sequence !== 'string')) {
    throw new InvalidRequestError(
      `Invalid type for 'stop': expected a string or an array of strings, but got ${jsonType(stop)} instead.`,
      'stop',
      'invalid_type',
    );
  }
  if (sequences.length > MAX_STOP_SEQUENCES) {
    throw new InvalidRequestError(
      `Invalid 'stop': array too long. Expected an array with maximum length ${MAX_STOP_SEQUENCES}, but got an array with length ${sequences.length} instead.`,
      'stop',
      'array_above_max_length',
    );
  }
  if (sequences.includes('')) throw new InvalidRequestError("Invalid 'stop': empty string. Expected a non-empty string.", 'stop');
  return sequences as string[];
}

function readStream(body: Record<string, unknown>): ChatRequest['stream'] {
  const { stream, stream_options: options } = body;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    throw OPENAI_FIELD_WORDS.wrongType('stream', 'boolean', stream);
  if (options !== undefined && options !== null) {
    if (stream !== true) {
      throw new InvalidRequestError("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
    }
    if (!isRecord(options)) throw OPENAI_FIELD_WORDS.wrongType('stream_options', 'object', options);
    for (const [field, value] of Object.entries(options)) {
      if (field !== 'include_usage' && field !== 'include_obfuscation') throw OPENAI_FIELD_WORDS.unknown(`stream_options.${field}`);
      if (value !== undefined && value !== null && typeof value !== 'boolean')
        throw OPENAI_FIELD_WORDS.wrongType(`stream_options.${field}`, 'boolean', value);
    }
  }
  return stream === true ? { includeUsage: isRecord(options) && options.include_usage === true } : undefined;
}

function readLogprobs(body: Record<string, unknown>): ChatRequest['logprobs'] {
  const { logprobs, top_logprobs: top } = body;
  if (logprobs !== undefined && logprobs !== null && typeof logprobs !== 'boolean')
    throw OPENAI_FIELD_WORDS.wrongType('logprobs', 'boolean', logprobs);
  if (top !== undefined && top !== null) {
    if (!Number.isInteger(top)) throw OPENAI_FIELD_WORDS.wrongType('top_logprobs', 'integer', top);
    if ((top as number) < 0) throw OPENAI_FIELD_WORDS.outOfRange('top_logprobs', 'min', 0, top as number);
    if ((top as number) > MAX_TOP_LOGPROBS) throw OPENAI_FIELD_WORDS.outOfRange('top_logprobs', 'max', MAX_TOP_LOGPROBS, top as number);
    if (logprobs !== true) {
      throw new InvalidRequestError("Invalid value for 'top_logprobs': 'logprobs' must be set to true to use it.", 'top_logprobs');
    }
  }
  return logprobs === true ? { top: (top as number | undefined) ?? 0 } : undefined;
}

/** The answer's shape from `tools` / `tool_choice` and `response_format`; `afterToolResult` when the last message is a tool's. */
function answerShape(body: Record<string, unknown>, afterToolResult: boolean, strict: StrictRules | undefined): AnswerShape {
  const tool = chosenTool(body, afterToolResult, strict);
  if (tool !== undefined) return tool;
  const format = body.response_format;
  if (format === undefined || format === null) return { kind: 'text' };
  if (!isRecord(format)) throw new InvalidRequestError("Invalid type for 'response_format': expected an object.", 'response_format');
  switch (format.type) {
    case 'text':
      return { kind: 'text' };
    case 'json_object':
      return { kind: 'json-object' };
    case 'json_schema': {
      const spec = format.json_schema;
      if (!isRecord(spec))
        throw new InvalidRequestError("Missing required parameter: 'response_format.json_schema'.", 'response_format.json_schema');
      if (typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) {
        throw new InvalidRequestError(
          "Invalid 'response_format.json_schema.name': expected 1 to 64 letters, digits, underscores or dashes.",
          'response_format.json_schema.name',
        );
      }
      if (!isRecord(spec.schema)) {
        throw new InvalidRequestError(
          "Invalid 'response_format.json_schema.schema': expected a JSON schema object.",
          'response_format.json_schema.schema',
        );
      }
      const schema = spec.schema as JsonSchema;
      if (spec.strict === true && strict !== undefined) checkStrict(strict, schema, `response_format '${spec.name}'`, 'response_format');
      return { kind: 'schema', name: spec.name, schema };
    }
    default:
      throw new InvalidRequestError(
        `Invalid value for 'response_format.type': ${JSON.stringify(format.type)}. Supported values are: 'text', 'json_object', and 'json_schema'.`,
        'response_format.type',
      );
  }
}

/** Throws OpenAI's 400 when strict mode would not take `schema`; `what` names it as OpenAI's message does. */
export function checkStrict(strict: StrictRules, schema: JsonSchema, what: string, param: string, code?: string): void {
  const problem = strict(schema);
  if (problem !== undefined) throw new InvalidRequestError(`Invalid schema for ${what}: ${problem}`, param, code);
}

/**
 * The function to call: the one `tool_choice` names, the first with `required`, and with `auto`
 * (the default) the first too — a stand-in exercises the tool path — unless the last message is a
 * tool's result, which is answered in words.
 */
function chosenTool(body: Record<string, unknown>, afterToolResult: boolean, strict: StrictRules | undefined): AnswerShape | undefined {
  const { tools, tool_choice: choice = 'auto' } = body;
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw new InvalidRequestError("Invalid type for 'tools': expected an array.", 'tools');
  const functions = tools.map((tool, index) => {
    const spec = isRecord(tool) && tool.type === 'function' && isRecord(tool.function) ? tool.function : undefined;
    if (spec === undefined || typeof spec.name !== 'string') {
      throw new InvalidRequestError(
        `Invalid 'tools[${index}]': expected { type: 'function', function: { name, parameters } }.`,
        `tools[${index}]`,
      );
    }
    const parameters = spec.parameters ?? { type: 'object', properties: {} };
    if (!isRecord(parameters)) throw new InvalidRequestError(`Invalid 'tools[${index}].function.parameters': expected an object.`);
    if (spec.strict === true && strict !== undefined) {
      checkStrict(
        strict,
        parameters as JsonSchema,
        `function '${spec.name}'`,
        `tools[${index}].function.parameters`,
        'invalid_function_parameters',
      );
    }
    return { kind: 'tool' as const, name: spec.name, schema: parameters as JsonSchema };
  });
  if (choice === 'none' || (functions.length === 0 && typeof choice === 'string')) return undefined;
  if (choice === 'required') return functions[0];
  if (choice === 'auto') return afterToolResult ? undefined : functions[0];
  const name = isRecord(choice) && isRecord(choice.function) ? choice.function.name : undefined;
  const named = functions.find((tool) => tool.name === name);
  if (named === undefined) {
    throw new InvalidRequestError(
      "Invalid 'tool_choice': expected 'none', 'auto', 'required' or a function named in 'tools'.",
      'tool_choice',
    );
  }
  return named;
}

/** The fewest prompt tokens OpenAI caches: prompts of 1,024 tokens or more (its prompt-caching guide)… */
const MIN_CACHE_TOKENS = 1024;
/** …served in steps of this many tokens. */
const CACHE_STEP_TOKENS = 128;

/** OpenAI's prompt cache for a chat or Responses body: every prompt of 1,024 tokens or more, routed by `prompt_cache_key`. */
export function automaticPrefix(body: Readonly<Record<string, unknown>>): CachePrefix {
  return {
    kind: 'automatic',
    key: typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : '',
    minTokens: MIN_CACHE_TOKENS,
    stepTokens: CACHE_STEP_TOKENS,
  };
}
