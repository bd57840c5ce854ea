/**
 * Anthropic's Messages API as `serve` speaks it: `POST /v1/messages`, answered whole or streamed
 * (`message_start` … `message_stop`), with custom tools and `tool_choice`, structured output
 * (`output_config.format`), stop sequences, and `POST /v1/messages/count_tokens`; answers and
 * errors in Anthropic's shapes.
 */

import type { JsonSchema } from '../../provider/json-schema.ts';
import {
  type AnswerShape,
  type CachePrefix,
  type ChatAnswer,
  type ChatApi,
  FAILURE_STATUS,
  type Failure,
  type FinishReason,
  InvalidRequestError,
  type StreamEvent,
  bearerToken,
  isRecord,
  jsonType,
  readTokenLimit,
} from '../serve/chat-api.ts';
import { type FieldRules, aNumber, anInteger, anObject, checkFields, oneOf, read, refused } from '../serve/request-fields.ts';
import type { HeaderFormat } from '../header-fields.ts';
import { ANTHROPIC_FIELD_WORDS } from './serve-field-words.ts';

// Anthropic's "overloaded" is 529: what a busy or failing API answers there.
// Its money run out is a 402 `billing_error`.
const STATUS = { ...FAILURE_STATUS, overloaded: 529, 'insufficient-funds': 402 };

const ERROR_TYPES = {
  'invalid-request': 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  'insufficient-funds': 'billing_error',
  'not-found': 'not_found_error',
  'too-large': 'request_too_large',
  'rate-limited': 'rate_limit_error',
  'server-error': 'api_error',
  timeout: 'timeout_error',
  overloaded: 'overloaded_error',
} as const;

/** The fields `count_tokens` takes: what shapes the prompt, without what shapes the answer's length or delivery. */
const COUNT_FIELDS: FieldRules = {
  model: read,
  messages: read,
  system: read,
  tools: read,
  tool_choice: read,
  output_config: read,
  thinking: refused('serve does not think: leave thinking out, or set it to {"type": "disabled"}', [{ type: 'disabled' }]),
  mcp_servers: refused('serve connects to no MCP servers'),
  context_management: refused('serve manages no context'),
};

/** Every field of a Messages request: what serve acts on, what it takes as a sampling knob, what it refuses. */
const FIELDS: FieldRules = {
  ...COUNT_FIELDS,
  max_tokens: read,
  stop_sequences: read,
  stream: read,
  temperature: aNumber(0, 1),
  top_k: anInteger(0),
  top_p: aNumber(0, 1),
  metadata: anObject,
  service_tier: oneOf('auto', 'standard_only'),
  container: refused('serve runs no containers'),
  output_format: refused('use output_config.format'),
};

/**
 * What Anthropic's dialect is made with from the rest of its vendor's folder — modules a plain run
 * loads too, handed over rather than imported, so that the dialect's chunk of the command's bundle
 * shares none of them.
 */
export interface AnthropicServeParts {
  /** Anthropic's rate-limit headers. */
  readonly headers: HeaderFormat;
  /** The fewest tokens of a marked prefix a model caches. */
  readonly minCacheTokens: (model: string) => number;
}

/** Anthropic's Messages API. */
export function anthropicMessagesApi(parts: AnthropicServeParts): ChatApi {
  return {
    name: 'anthropic',
    headers: parts.headers,
    requestIdHeader: 'request-id',
    retryAfterMs: false,
    missingKeyMessage: 'x-api-key header is required',
    refusedKeyMessage: () => 'invalid x-api-key',
    schemaParam: 'tools',

    keyOf(headers) {
      const key = headers['x-api-key'];
      if (typeof key === 'string' && key.trim() !== '') return key.trim();
      return bearerToken(headers);
    },

    parse(body) {
      if (!isRecord(body)) throw new InvalidRequestError(`Input should be a valid dictionary, got ${jsonType(body)}`);
      if (body.max_tokens === undefined) {
        for (const field of ['model', 'messages']) if (body[field] === undefined) throw requiredField(field);
        throw requiredField('max_tokens');
      }
      const prompt = readPrompt(body, FIELDS);
      const maxOutputTokens = readTokenLimit(body, 'max_tokens');
      if (body.stream !== undefined && typeof body.stream !== 'boolean')
        throw ANTHROPIC_FIELD_WORDS.wrongType('stream', 'boolean', body.stream);
      return {
        ...prompt,
        cachePrefix: markedPrefix(body, parts.minCacheTokens(prompt.model)),
        maxOutputTokens,
        stop: readStopSequences(body.stop_sequences),
        stream: body.stream === true ? { includeUsage: true } : undefined,
      };
    },

    respond(request, answer, id) {
      const [choice] = answer.choices;
      const { shape } = request;
      const content =
        shape.kind === 'tool'
          ? // A tool call cut off is incomplete: its input never finished, so it comes empty.
            [{ type: 'tool_use', id: toolUseId(id), name: shape.name, input: choice!.finish === 'length' ? {} : choice!.value }]
          : [{ type: 'text', text: choice!.content }];
      return {
        id: messageId(id),
        type: 'message',
        role: 'assistant',
        model: request.model,
        content,
        stop_reason: stopReason(choice!.finish),
        stop_sequence: choice!.stopSequence ?? null,
        usage: { ...inputUsage(answer), output_tokens: answer.outputTokens },
      };
    },

    stream(request, answer, id) {
      const [choice] = answer.choices;
      const { shape } = request;
      const event = (type: string, data: Record<string, unknown>, tokens = 0): StreamEvent => ({
        event: type,
        data: JSON.stringify({ type, ...data }),
        tokens,
      });
      const block =
        shape.kind === 'tool' ? { type: 'tool_use', id: toolUseId(id), name: shape.name, input: {} } : { type: 'text', text: '' };
      return [
        event('message_start', {
          message: {
            id: messageId(id),
            type: 'message',
            role: 'assistant',
            model: request.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { ...inputUsage(answer), output_tokens: 0 },
          },
        }),
        event('content_block_start', { index: 0, content_block: block }),
        event('ping', {}),
        ...choice!.pieces.map((piece) =>
          event(
            'content_block_delta',
            {
              index: 0,
              delta: shape.kind === 'tool' ? { type: 'input_json_delta', partial_json: piece } : { type: 'text_delta', text: piece },
            },
            1,
          ),
        ),
        event('content_block_stop', { index: 0 }),
        event('message_delta', {
          delta: { stop_reason: stopReason(choice!.finish), stop_sequence: choice!.stopSequence ?? null },
          usage: { output_tokens: answer.outputTokens },
        }),
        event('message_stop', {}),
      ];
    },

    streamFailure(failure) {
      return {
        event: 'error',
        data: JSON.stringify({ type: 'error', error: { type: ERROR_TYPES[failure.kind], message: failure.message } }),
        tokens: 0,
      };
    },

    fail(failure, requestId) {
      return { status: STATUS[failure.kind], body: anthropicErrorBody(failure, requestId) };
    },

    models(ids) {
      return { data: ids.map(modelObject), has_more: false, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null };
    },

    model: modelObject,
  };
}

/** The prompt `POST /v1/messages/count_tokens` counts: the same text a message with this body is counted on. */
export function countTokensPrompt(body: unknown): string {
  if (!isRecord(body)) throw new InvalidRequestError(`Input should be a valid dictionary, got ${jsonType(body)}`);
  return readPrompt(body, COUNT_FIELDS).promptText;
}

/** The input tokens as Anthropic counts them: `input_tokens` leaves out those the cache served or stored, each counted apart. */
function inputUsage(answer: ChatAnswer) {
  const read = answer.cacheReadTokens ?? 0;
  const write = answer.cacheWriteTokens ?? 0;
  return { input_tokens: answer.inputTokens - read - write, cache_creation_input_tokens: write, cache_read_input_tokens: read };
}

/** Anthropic's status and error body for a failure (what `proxy` answers its clients with too). */
export function anthropicFailure(failure: Failure, requestId: string): { status: number; body: unknown } {
  return { status: STATUS[failure.kind], body: anthropicErrorBody(failure, requestId) };
}

function anthropicErrorBody(failure: Failure, requestId: string) {
  return { type: 'error', error: { type: ERROR_TYPES[failure.kind], message: failure.message }, request_id: requestId };
}

function modelObject(id: string): unknown {
  return { type: 'model', id, display_name: id, created_at: '2024-01-01T00:00:00Z' };
}

const requiredField = (field: string) => new InvalidRequestError(`${field}: Field required`, field);
const messageId = (id: string) => `msg_${id.slice(0, 24)}`;
const toolUseId = (id: string) => `toolu_${id.slice(0, 24)}`;

function stopReason(finish: FinishReason): string {
  return { end: 'end_turn', length: 'max_tokens', 'stop-sequence': 'stop_sequence', tool: 'tool_use' }[finish];
}

/** What the messages, the system prompt, the tools and the output format say, checked against `fields`. */
function readPrompt(body: Record<string, unknown>, fields: FieldRules) {
  const { model, messages, system } = body;
  for (const field of ['model', 'messages']) if (body[field] === undefined) throw requiredField(field);
  if (typeof model !== 'string' || model === '') throw new InvalidRequestError('model: Input should be a valid string', 'model');
  if (!Array.isArray(messages)) throw new InvalidRequestError('messages: Input should be a valid list', 'messages');
  if (messages.length === 0) throw new InvalidRequestError('messages: at least one message is required', 'messages');
  checkFields(body, fields, ANTHROPIC_FIELD_WORDS);

  const texts = system === undefined || system === null ? [] : [blocksText(system, 'system')];
  let lastUserText = '';
  let answered = false;
  let afterToolResult = false;
  messages.forEach((message, index) => {
    const where = `messages.${index}`;
    if (!isRecord(message)) throw new InvalidRequestError(`${where}: Input should be a valid dictionary`, where);
    if (message.role !== 'user' && message.role !== 'assistant') {
      throw new InvalidRequestError(`${where}.role: Input should be 'user' or 'assistant'`, `${where}.role`);
    }
    const text = blocksText(message.content, `${where}.content`);
    texts.push(text);
    if (message.role === 'user') lastUserText = text;
    else answered = true;
    afterToolResult = Array.isArray(message.content) && message.content.some((block) => isRecord(block) && block.type === 'tool_result');
  });
  return {
    model,
    promptText: texts.join('\n'),
    lastUserText,
    ...(answered ? { answered } : {}),
    shape: answerShape(body, afterToolResult),
  };
}

/** The text of a string or of content blocks (text blocks, and tool results' text). */
function blocksText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new InvalidRequestError(`${where}: Input should be a valid string or list`, where);
  return content
    .map((block, index): string => {
      if (!isRecord(block) || typeof block.type !== 'string') {
        throw new InvalidRequestError(`${where}.${index}: Input should be a valid dictionary with a type`, `${where}.${index}`);
      }
      if (block.type === 'text') return typeof block.text === 'string' ? block.text : '';
      if (block.type === 'tool_result')
        return typeof block.content === 'string' ? block.content : blocksText(block.content ?? [], `${where}.${index}.content`);
      return '';
    })
    .join('\n');
}

function readStopSequences(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw ANTHROPIC_FIELD_WORDS.wrongType('stop_sequences', 'array', value);
  value.forEach((sequence, index) => {
    if (typeof sequence !== 'string')
      throw new InvalidRequestError(`stop_sequences.${index}: Input should be a valid string`, 'stop_sequences');
    if (sequence.trim() === '') {
      throw new InvalidRequestError('stop_sequences: each stop sequence must contain non-whitespace', 'stop_sequences');
    }
  });
  return value as string[];
}

/**
 * A tool call when tools are given: the named one (`tool`), the first (`any`, and `auto` — the
 * default — unless the last message carries a tool's result, which is answered in words); else a
 * value fitting `output_config.format` when it asks for one; text otherwise.
 */
function answerShape(body: Record<string, unknown>, afterToolResult: boolean): AnswerShape {
  const format = outputFormat(body.output_config);
  const { tools, tool_choice: choice } = body;
  if (tools === undefined || tools === null) return format;
  if (!Array.isArray(tools)) throw new InvalidRequestError('tools: Input should be a valid list', 'tools');
  const custom = tools.map((tool, index) => {
    if (!isRecord(tool)) throw new InvalidRequestError(`tools.${index}: Input should be a valid dictionary`, `tools.${index}`);
    if (tool.type !== undefined && tool.type !== 'custom') {
      throw new InvalidRequestError(
        `tools.${index}.type: serve runs custom tools only, not ${JSON.stringify(tool.type)}`,
        `tools.${index}.type`,
      );
    }
    if (typeof tool.name !== 'string') throw new InvalidRequestError(`tools.${index}.name: Field required`, `tools.${index}`);
    if (tool.input_schema !== undefined && !isRecord(tool.input_schema)) {
      throw new InvalidRequestError(`tools.${index}.input_schema: Input should be a valid dictionary`, `tools.${index}.input_schema`);
    }
    return { kind: 'tool' as const, name: tool.name, schema: (tool.input_schema ?? { type: 'object' }) as JsonSchema };
  });
  const type = isRecord(choice) ? choice.type : choice === undefined || choice === null ? 'auto' : undefined;
  if (type === 'none' || custom.length === 0) return format;
  if (type === 'any') return custom[0]!;
  if (type === 'auto') return afterToolResult ? format : custom[0]!;
  if (type === 'tool') {
    const named = custom.find((tool) => tool.name === (choice as Record<string, unknown>).name);
    if (named !== undefined) return named;
    throw new InvalidRequestError('tool_choice.name: expected the name of a tool in tools', 'tool_choice.name');
  }
  throw new InvalidRequestError("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", 'tool_choice.type');
}

/** `output_config.format`: a JSON schema the text answer must fit; text when there is none. */
function outputFormat(config: unknown): AnswerShape {
  if (config === undefined || config === null) return { kind: 'text' };
  if (!isRecord(config)) throw ANTHROPIC_FIELD_WORDS.wrongType('output_config', 'object', config);
  for (const field of Object.keys(config)) {
    if (field !== 'format' && field !== 'effort') throw ANTHROPIC_FIELD_WORDS.unknown(`output_config.${field}`);
  }
  if (
    config.effort !== undefined &&
    config.effort !== null &&
    !['low', 'medium', 'high', 'xhigh', 'max'].includes(config.effort as string)
  ) {
    throw ANTHROPIC_FIELD_WORDS.notOneOf('output_config.effort', ['low', 'medium', 'high', 'xhigh', 'max'], config.effort);
  }
  const { format } = config;
  if (format === undefined || format === null) return { kind: 'text' };
  if (!isRecord(format)) throw ANTHROPIC_FIELD_WORDS.wrongType('output_config.format', 'object', format);
  if (format.type !== 'json_schema') throw ANTHROPIC_FIELD_WORDS.notOneOf('output_config.format.type', ['json_schema'], format.type);
  if (!isRecord(format.schema)) {
    throw new InvalidRequestError('output_config.format.schema: Field required', 'output_config.format.schema');
  }
  return { kind: 'schema', name: 'output', schema: format.schema as JsonSchema };
}

/**
 * Anthropic's marked prefix in a Messages body: the text of the system prompt's and the messages'
 * blocks up to the last one marked `cache_control` (tools before them count towards its identity),
 * cached when it has `minTokens` (the model's minimum); undefined when none is marked.
 */
export function markedPrefix(body: Readonly<Record<string, unknown>>, minTokens: number): CachePrefix | undefined {
  const texts: string[] = [];
  let marked: string | undefined;
  const visit = (content: unknown) => {
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content))
      for (const block of content) {
        const { type, text, cache_control: mark } = (block ?? {}) as Record<string, unknown>;
        if (type === 'text' && typeof text === 'string') texts.push(text);
        if (mark !== undefined && mark !== null) marked = texts.join('\n');
      }
  };
  visit(body.system);
  for (const message of Array.isArray(body.messages) ? body.messages : []) visit((message as Record<string, unknown> | null)?.content);
  if (marked === undefined) return undefined;
  return { kind: 'marked', text: marked, identity: JSON.stringify(body.tools ?? null), minTokens };
}
