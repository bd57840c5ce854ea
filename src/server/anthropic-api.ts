/**
 * Anthropic's Messages API as `serve` speaks it: `POST /v1/messages` (not streamed) with custom
 * tools and `tool_choice`, answers and errors in Anthropic's shapes.
 */

import {
  type AnswerShape,
  type ChatApi,
  FAILURE_STATUS,
  InvalidRequestError,
  bearerToken,
  isRecord,
  jsonType,
  readTokenLimit,
} from './chat-api.ts';
import type { JsonSchema } from '../provider/json-schema.ts';

// Anthropic's "overloaded" is 529: what a busy or failing API answers there.
const STATUS = { ...FAILURE_STATUS, overloaded: 529 };

const ERROR_TYPES = {
  'invalid-request': 'invalid_request_error',
  authentication: 'authentication_error',
  'not-found': 'not_found_error',
  'too-large': 'request_too_large',
  'rate-limited': 'rate_limit_error',
  'server-error': 'api_error',
  timeout: 'timeout_error',
  overloaded: 'overloaded_error',
} as const;

export const anthropicApi: ChatApi = {
  name: 'anthropic',
  headerStyle: 'anthropic',
  requestIdHeader: 'request-id',
  retryAfterMs: false,

  keyOf(headers) {
    const key = headers['x-api-key'];
    if (typeof key === 'string' && key.trim() !== '') return key.trim();
    return bearerToken(headers);
  },

  parse(body) {
    if (!isRecord(body)) throw new InvalidRequestError(`Input should be a valid dictionary, got ${jsonType(body)}`);
    const { model, messages, system } = body;
    for (const field of ['model', 'messages', 'max_tokens']) {
      if (body[field] === undefined) throw new InvalidRequestError(`${field}: Field required`, field);
    }
    if (typeof model !== 'string' || model === '') throw new InvalidRequestError('model: Input should be a valid string', 'model');
    if (!Array.isArray(messages)) throw new InvalidRequestError('messages: Input should be a valid list', 'messages');
    if (messages.length === 0) throw new InvalidRequestError('messages: at least one message is required', 'messages');
    const maxOutputTokens = readTokenLimit(body, 'max_tokens');
    if (body.stream === true) throw new InvalidRequestError('stream: serve does not stream, set it to false', 'stream');

    const texts = system === undefined ? [] : [blocksText(system, 'system')];
    let lastUserText = '';
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
      afterToolResult = Array.isArray(message.content) && message.content.some((block) => isRecord(block) && block.type === 'tool_result');
    });
    return { model, promptText: texts.join('\n'), lastUserText, shape: answerShape(body, afterToolResult), maxOutputTokens };
  },

  respond(request, answer, id) {
    const content =
      request.shape.kind === 'tool'
        ? // A tool call cut off is incomplete: its input never finished, so it comes empty.
          [{ type: 'tool_use', id: `toolu_${id.slice(0, 24)}`, name: request.shape.name, input: answer.truncated ? {} : answer.value }]
        : [{ type: 'text', text: answer.content }];
    return {
      id: `msg_${id.slice(0, 24)}`,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content,
      stop_reason: answer.truncated ? 'max_tokens' : request.shape.kind === 'tool' ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: answer.inputTokens, output_tokens: answer.outputTokens },
    };
  },

  fail(failure, requestId) {
    return {
      status: STATUS[failure.kind],
      body: { type: 'error', error: { type: ERROR_TYPES[failure.kind], message: failure.message }, request_id: requestId },
    };
  },

  models(ids) {
    const data = ids.map((id) => ({ type: 'model', id, display_name: id, created_at: '2024-01-01T00:00:00Z' }));
    return { data, has_more: false, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null };
  },
};

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

/**
 * A tool call when tools are given: the named one (`tool`), the first (`any`, and `auto` — the
 * default — unless the last message carries a tool's result, which is answered in words); text otherwise.
 */
function answerShape(body: Record<string, unknown>, afterToolResult: boolean): AnswerShape {
  const { tools, tool_choice: choice } = body;
  if (tools === undefined || tools === null) return { kind: 'text' };
  if (!Array.isArray(tools)) throw new InvalidRequestError('tools: Input should be a valid list', 'tools');
  const custom = tools.map((tool, index) => {
    if (!isRecord(tool) || typeof tool.name !== 'string')
      throw new InvalidRequestError(`tools.${index}.name: Field required`, `tools.${index}`);
    if (tool.input_schema !== undefined && !isRecord(tool.input_schema)) {
      throw new InvalidRequestError(`tools.${index}.input_schema: Input should be a valid dictionary`, `tools.${index}.input_schema`);
    }
    return { kind: 'tool' as const, name: tool.name, schema: (tool.input_schema ?? { type: 'object' }) as JsonSchema };
  });
  const type = isRecord(choice) ? choice.type : choice === undefined ? 'auto' : undefined;
  if (type === 'none' || custom.length === 0) return { kind: 'text' };
  if (type === 'any') return custom[0]!;
  if (type === 'auto') return afterToolResult ? { kind: 'text' } : custom[0]!;
  if (type === 'tool') {
    const named = custom.find((tool) => tool.name === (choice as Record<string, unknown>).name);
    if (named !== undefined) return named;
    throw new InvalidRequestError('tool_choice.name: expected the name of a tool in tools', 'tool_choice.name');
  }
  throw new InvalidRequestError("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", 'tool_choice.type');
}
