/**
 * OpenAI's Chat Completions API as `serve` speaks it: `POST /v1/chat/completions` (not streamed),
 * with `response_format` (`text`, `json_object`, `json_schema`) and function tools, answers and
 * errors in OpenAI's shapes.
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

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

export const openAiApi: ChatApi = {
  name: 'openai',
  headerStyle: 'openai',
  requestIdHeader: 'x-request-id',
  retryAfterMs: true,

  keyOf: bearerToken,

  parse(body) {
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
      throw new InvalidRequestError("Invalid 'messages': empty array. Expected an array with minimum length 1.", 'messages', 'empty_array');
    }
    const texts: string[] = [];
    let lastUserText = '';
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
    });
    if (body.stream === true) throw new InvalidRequestError('serve does not stream: set stream to false.', 'stream');
    if (body.n !== undefined && body.n !== null && body.n !== 1) throw new InvalidRequestError('serve makes one choice: set n to 1.', 'n');
    const maxTokens = readTokenLimit(body, 'max_tokens');
    // The newer field wins when a request gives both.
    const maxOutputTokens = readTokenLimit(body, 'max_completion_tokens') ?? maxTokens;
    const last = messages.at(-1) as Record<string, unknown>;
    return { model, promptText: texts.join('\n'), lastUserText, shape: answerShape(body, last.role === 'tool'), maxOutputTokens };
  },

  respond(request, answer, id) {
    const tool = request.shape.kind === 'tool';
    const message = tool
      ? {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [
            { id: `call_${id.slice(0, 24)}`, type: 'function', function: { name: request.shape.name, arguments: answer.content } },
          ],
        }
      : { role: 'assistant', content: answer.content, refusal: null };
    return {
      id: `chatcmpl-${id}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: answer.truncated ? 'length' : tool ? 'tool_calls' : 'stop' }],
      usage: {
        prompt_tokens: answer.inputTokens,
        completion_tokens: answer.outputTokens,
        total_tokens: answer.inputTokens + answer.outputTokens,
      },
      system_fingerprint: null,
    };
  },

  fail(failure) {
    const type =
      failure.kind === 'rate-limited'
        ? (failure.limit ?? 'requests')
        : failure.kind === 'overloaded' || failure.kind === 'timeout' || failure.kind === 'server-error'
          ? 'server_error'
          : 'invalid_request_error';
    const code = failure.code ?? (failure.kind === 'rate-limited' ? 'rate_limit_exceeded' : null);
    return {
      status: FAILURE_STATUS[failure.kind],
      body: { error: { message: failure.message, type, param: failure.param ?? null, code } },
    };
  },

  models(ids) {
    return { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: 'news-processor' })) };
  },
};

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

/** The answer's shape from `tools` / `tool_choice` and `response_format`; `afterToolResult` when the last message is a tool's. */
function answerShape(body: Record<string, unknown>, afterToolResult: boolean): AnswerShape {
  const tool = chosenTool(body, afterToolResult);
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
      return { kind: 'schema', name: spec.name, schema: spec.schema as JsonSchema };
    }
    default:
      throw new InvalidRequestError(
        `Invalid value for 'response_format.type': ${JSON.stringify(format.type)}. Supported values are: 'text', 'json_object', and 'json_schema'.`,
        'response_format.type',
      );
  }
}

/**
 * The function to call: the one `tool_choice` names, the first with `required`, and with `auto`
 * (the default) the first too — a stand-in exercises the tool path — unless the last message is a
 * tool's result, which is answered in words.
 */
function chosenTool(body: Record<string, unknown>, afterToolResult: boolean): AnswerShape | undefined {
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
