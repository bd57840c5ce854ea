/**
 * OpenAI's Responses API as `serve` speaks it: `POST /v1/responses` with `input` (a string or
 * items), `instructions`, `text.format` (`json_schema` with strict mode's rules), function tools,
 * `max_output_tokens` (a longer answer is `incomplete`), `previous_response_id`, log probabilities,
 * answered whole or streamed as `response.*` events; `GET /v1/responses/{id}` (the server keeps
 * what it answered). Keys, headers and errors are OpenAI's, as on its Chat Completions route.
 */

import type { JsonSchema } from '../../provider/json-schema.ts';
import {
  type AnswerChoice,
  type AnswerShape,
  type ChatAnswer,
  type ChatApi,
  type ChatRequest,
  type Failure,
  InvalidRequestError,
  type ParseOptions,
  type StreamEvent,
  isRecord,
  jsonType,
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
import {
  automaticPrefix,
  checkStrict,
  logprobOf,
  openAiChatApi,
  openAiErrorBody,
  type OpenAiServeParts,
  type StrictRules,
} from './serve-chat.ts';
import { OPENAI_FIELD_WORDS } from './serve-field-words.ts';

/** OpenAI refuses a smaller output limit. */
const MIN_OUTPUT_TOKENS = 16;
const MAX_TOP_LOGPROBS = 20;
/** What `include` may ask for: logprobs are made; there is no reasoning to encrypt, so that asks for nothing. */
const INCLUDABLE = ['message.output_text.logprobs', 'reasoning.encrypted_content'];
const ROLES = ['user', 'assistant', 'system', 'developer'];

const FIELDS: FieldRules = {
  model: read,
  input: read,
  instructions: read,
  text: read,
  tools: read,
  tool_choice: read,
  max_output_tokens: read,
  stream: read,
  stream_options: read,
  store: read,
  previous_response_id: read,
  include: read,
  top_logprobs: read,
  temperature: aNumber(0, 2),
  top_p: aNumber(0, 1),
  metadata: anObject,
  parallel_tool_calls: aBoolean,
  user: aString,
  safety_identifier: aString,
  prompt_cache_key: aString,
  prompt_cache_retention: oneOf('in-memory', '24h'),
  service_tier: oneOf('auto', 'default', 'flex', 'scale', 'priority'),
  truncation: oneOf('auto', 'disabled'),
  reasoning: anObject,
  max_tool_calls: anInteger(1),
  background: refused('is not supported by serve: it answers in the request. Set it to false.', [false]),
  conversation: refused("is not supported by serve: chain responses with 'previous_response_id'."),
  prompt: refused('is not supported by serve: it keeps no prompt templates.'),
};

/** OpenAI's Responses API: its Chat Completions' keys, headers and errors, its own requests, answers and streams. */
export function openAiResponsesApi(parts: OpenAiServeParts): ChatApi {
  const api: ChatApi = {
    ...openAiChatApi(parts),
    name: 'responses',
    schemaParam: 'text.format.schema',

    parse(body, options) {
      if (!isRecord(body)) throw new InvalidRequestError(`Invalid request body: expected a JSON object, but got ${jsonType(body)}.`);
      const { model, input, instructions } = body;
      if (model === undefined) throw new InvalidRequestError("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
      if (typeof model !== 'string' || model === '') throw OPENAI_FIELD_WORDS.wrongType('model', 'string', model);
      checkFields(body, FIELDS, OPENAI_FIELD_WORDS);
      if (instructions !== undefined && instructions !== null && typeof instructions !== 'string') {
        throw OPENAI_FIELD_WORDS.wrongType('instructions', 'string', instructions);
      }
      const conversation = readInput(input);
      const earlier = readPrevious(body.previous_response_id, options.previousResponse);
      const texts = [earlier, typeof instructions === 'string' ? instructions : undefined, ...conversation.texts].filter(
        (text) => text !== undefined,
      );
      const store = body.store === undefined || body.store === null ? true : body.store;
      if (typeof store !== 'boolean') throw OPENAI_FIELD_WORDS.wrongType('store', 'boolean', store);
      return {
        model,
        promptText: texts.join('\n'),
        lastUserText: conversation.lastUserText,
        cachePrefix: automaticPrefix(body),
        shape: answerShape(body, conversation.afterToolResult, options.lenientSchemas ? undefined : parts.strictSchemaProblem),
        maxOutputTokens: readMaxOutputTokens(body.max_output_tokens),
        stream: readStream(body),
        logprobs: readLogprobs(body),
        echo: {
          instructions: instructions ?? null,
          max_output_tokens: body.max_output_tokens ?? null,
          previous_response_id: body.previous_response_id ?? null,
          store,
          temperature: body.temperature ?? 1,
          top_p: body.top_p ?? 1,
          text: { format: isRecord(body.text) && isRecord(body.text.format) ? body.text.format : { type: 'text' }, verbosity: 'medium' },
          tools: body.tools ?? [],
          tool_choice: body.tool_choice ?? 'auto',
          parallel_tool_calls: body.parallel_tool_calls ?? true,
          metadata: body.metadata ?? {},
          user: body.user ?? null,
          top_logprobs: body.top_logprobs ?? 0,
          truncation: body.truncation ?? 'disabled',
        },
      };
    },

    respond(request, answer, id) {
      return responseObject(request, answer, id, statusOf(answer.choices[0]!));
    },

    stream(request, answer, id) {
      const [choice] = answer.choices;
      const item = outputItem(request, choice!, id);
      const events: StreamEvent[] = [];
      const push = (type: string, data: Record<string, unknown>, tokens = 0) =>
        events.push({ event: type, data: JSON.stringify({ type, sequence_number: events.length, ...data }), tokens });
      const started = responseObject(request, answer, id, 'in_progress');
      push('response.created', { response: { ...started, output: [], usage: null } });
      push('response.in_progress', { response: { ...started, output: [], usage: null } });
      const at = { item_id: item.id, output_index: 0 };
      if (item.type === 'function_call') {
        push('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', arguments: '' } });
        for (const piece of choice!.pieces) push('response.function_call_arguments.delta', { ...at, delta: piece }, 1);
        push('response.function_call_arguments.done', { ...at, arguments: item.arguments, name: item.name });
      } else {
        const [part] = item.content;
        const emptyPart = { ...part, text: '', logprobs: [] };
        push('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
        push('response.content_part.added', { ...at, content_index: 0, part: emptyPart });
        choice!.pieces.forEach((piece, index) => {
          const logprob = choice!.logprobs?.[index];
          push(
            'response.output_text.delta',
            { ...at, content_index: 0, delta: piece, logprobs: logprob === undefined ? [] : [logprobOf(logprob)] },
            1,
          );
        });
        push('response.output_text.done', { ...at, content_index: 0, text: part!.text, logprobs: part!.logprobs });
        push('response.content_part.done', { ...at, content_index: 0, part });
      }
      push('response.output_item.done', { output_index: 0, item });
      const finished = responseObject(request, answer, id, statusOf(choice!));
      push(finished.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: finished });
      return events;
    },

    streamFailure(failure: Failure, requestId: string) {
      const error = openAiErrorBody(failure).error;
      // Sent after the events that went out; its number only has to come after theirs.
      return {
        event: 'response.failed',
        data: JSON.stringify({
          type: 'response.failed',
          sequence_number: Number.MAX_SAFE_INTEGER,
          response: {
            id: `resp_${requestId.replace(/^req_/, '')}`,
            object: 'response',
            status: 'failed',
            error: { code: error.type, message: failure.message },
            output: [],
            usage: null,
          },
        }),
        tokens: 0,
      };
    },

    keptAs(request, id) {
      return request.echo?.store === false ? undefined : responseId(id);
    },
  };
  return api;
}

const responseId = (id: string) => `resp_${id}`;

type Status = 'completed' | 'incomplete' | 'in_progress';

function statusOf(choice: AnswerChoice): Status {
  return choice.finish === 'length' ? 'incomplete' : 'completed';
}

function responseObject(request: ChatRequest, answer: ChatAnswer, id: string, status: Status) {
  const [choice] = answer.choices;
  return {
    id: responseId(id),
    object: 'response',
    created_at: answer.createdSeconds,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model: request.model,
    output: [outputItem(request, choice!, id)],
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    ...request.echo,
    usage: {
      input_tokens: answer.inputTokens,
      input_tokens_details: { cached_tokens: answer.cacheReadTokens ?? 0 },
      output_tokens: answer.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: answer.inputTokens + answer.outputTokens,
    },
  };
}

function outputItem(request: ChatRequest, choice: AnswerChoice, id: string) {
  const status = statusOf(choice);
  if (request.shape.kind === 'tool') {
    return {
      id: `fc_${id}`,
      type: 'function_call' as const,
      status,
      arguments: choice.content,
      call_id: `call_${id.slice(0, 24)}`,
      name: request.shape.name,
    };
  }
  return {
    id: `msg_${id}`,
    type: 'message' as const,
    status,
    role: 'assistant',
    content: [{ type: 'output_text', text: choice.content, annotations: [], logprobs: (choice.logprobs ?? []).map(logprobOf) }],
  };
}

/** `input`: a string (one user message) or items — messages, function calls and their outputs. */
function readInput(input: unknown): { texts: string[]; lastUserText: string; afterToolResult: boolean } {
  if (input === undefined || input === null) {
    throw new InvalidRequestError("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  }
  if (typeof input === 'string') return { texts: [input], lastUserText: input, afterToolResult: false };
  if (!Array.isArray(input)) throw OPENAI_FIELD_WORDS.wrongType('input', 'array', input);
  const texts: string[] = [];
  let lastUserText = '';
  let afterToolResult = false;
  input.forEach((item, index) => {
    const where = `input[${index}]`;
    if (!isRecord(item)) throw OPENAI_FIELD_WORDS.wrongType(where, 'object', item);
    const type = item.type ?? 'message';
    afterToolResult = type === 'function_call_output';
    if (type === 'message') {
      if (typeof item.role !== 'string' || !ROLES.includes(item.role)) {
        throw new InvalidRequestError(
          `Invalid value: ${JSON.stringify(item.role)}. Supported values are: ${ROLES.map((role) => `'${role}'`).join(', ')}.`,
          `${where}.role`,
          'invalid_value',
        );
      }
      const text = contentText(item.content, `${where}.content`);
      texts.push(text);
      if (item.role === 'user') lastUserText = text;
    } else if (type === 'function_call_output') {
      const { output } = item;
      texts.push(typeof output === 'string' ? output : contentText(output, `${where}.output`));
    } else if (type !== 'function_call' && type !== 'reasoning' && type !== 'item_reference') {
      throw new InvalidRequestError(
        `Invalid value: ${JSON.stringify(type)}. serve takes input items of type 'message', 'function_call', 'function_call_output', 'reasoning' and 'item_reference'.`,
        `${where}.type`,
        'invalid_value',
      );
    }
  });
  return { texts, lastUserText, afterToolResult };
}

/** A message's text: a string, or its text parts (`input_text`, `output_text`; other parts say nothing to a simulation). */
function contentText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw OPENAI_FIELD_WORDS.wrongType(where, 'array', content);
  return content
    .map((part, index) => {
      if (!isRecord(part) || typeof part.type !== 'string') throw OPENAI_FIELD_WORDS.wrongType(`${where}[${index}]`, 'object', part);
      return (part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string' ? part.text : '';
    })
    .join('\n');
}

function readPrevious(id: unknown, previous: ParseOptions['previousResponse']): string | undefined {
  if (id === undefined || id === null) return undefined;
  if (typeof id !== 'string') throw OPENAI_FIELD_WORDS.wrongType('previous_response_id', 'string', id);
  const found = previous?.(id);
  if (found === undefined) {
    throw new InvalidRequestError(`Previous response with id '${id}' not found.`, 'previous_response_id', 'previous_response_not_found');
  }
  return found.promptText;
}

function readMaxOutputTokens(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value)) throw OPENAI_FIELD_WORDS.wrongType('max_output_tokens', 'integer', value);
  if ((value as number) < MIN_OUTPUT_TOKENS)
    throw OPENAI_FIELD_WORDS.outOfRange('max_output_tokens', 'min', MIN_OUTPUT_TOKENS, value as number);
  return value as number;
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
    for (const field of Object.keys(options))
      if (field !== 'include_obfuscation') throw OPENAI_FIELD_WORDS.unknown(`stream_options.${field}`);
  }
  return stream === true ? { includeUsage: true } : undefined;
}

function readLogprobs(body: Record<string, unknown>): ChatRequest['logprobs'] {
  const { include, top_logprobs: top } = body;
  let asked = false;
  if (include !== undefined && include !== null) {
    if (!Array.isArray(include)) throw OPENAI_FIELD_WORDS.wrongType('include', 'array', include);
    include.forEach((entry, index) => {
      if (!INCLUDABLE.includes(entry as string)) throw OPENAI_FIELD_WORDS.notOneOf(`include[${index}]`, INCLUDABLE, entry);
    });
    asked = include.includes('message.output_text.logprobs');
  }
  if (top !== undefined && top !== null) {
    if (!Number.isInteger(top)) throw OPENAI_FIELD_WORDS.wrongType('top_logprobs', 'integer', top);
    if ((top as number) < 0) throw OPENAI_FIELD_WORDS.outOfRange('top_logprobs', 'min', 0, top as number);
    if ((top as number) > MAX_TOP_LOGPROBS) throw OPENAI_FIELD_WORDS.outOfRange('top_logprobs', 'max', MAX_TOP_LOGPROBS, top as number);
    asked = true;
  }
  return asked ? { top: (top as number | undefined) ?? 0 } : undefined;
}

/** The answer's shape from `tools` / `tool_choice` and `text.format`; `afterToolResult` when the last item is a function's output. */
function answerShape(body: Record<string, unknown>, afterToolResult: boolean, strict: StrictRules | undefined): AnswerShape {
  const tool = chosenTool(body, afterToolResult, strict);
  if (tool !== undefined) return tool;
  const { text } = body;
  if (text === undefined || text === null) return { kind: 'text' };
  if (!isRecord(text)) throw OPENAI_FIELD_WORDS.wrongType('text', 'object', text);
  for (const field of Object.keys(text)) if (field !== 'format' && field !== 'verbosity') throw OPENAI_FIELD_WORDS.unknown(`text.${field}`);
  if (text.verbosity !== undefined && text.verbosity !== null && !['low', 'medium', 'high'].includes(text.verbosity as string)) {
    throw OPENAI_FIELD_WORDS.notOneOf('text.verbosity', ['low', 'medium', 'high'], text.verbosity);
  }
  const { format } = text;
  if (format === undefined || format === null) return { kind: 'text' };
  if (!isRecord(format)) throw OPENAI_FIELD_WORDS.wrongType('text.format', 'object', format);
  switch (format.type) {
    case 'text':
      return { kind: 'text' };
    case 'json_object':
      return { kind: 'json-object' };
    case 'json_schema': {
      if (typeof format.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(format.name)) {
        throw new InvalidRequestError(
          "Invalid 'text.format.name': expected 1 to 64 letters, digits, underscores or dashes.",
          'text.format.name',
          'invalid_value',
        );
      }
      if (!isRecord(format.schema))
        throw new InvalidRequestError("Missing required parameter: 'text.format.schema'.", 'text.format.schema');
      const schema = format.schema as JsonSchema;
      if (format.strict === true && strict !== undefined)
        checkStrict(strict, schema, `response_format '${format.name}'`, 'text.format.schema', 'invalid_json_schema');
      return { kind: 'schema', name: format.name, schema };
    }
    default:
      throw OPENAI_FIELD_WORDS.notOneOf('text.format.type', ['text', 'json_object', 'json_schema'], format.type);
  }
}

/**
 * The function to call, as on the Chat Completions route: the one `tool_choice` names, the first
 * with `required` and with `auto` (the default) unless the last item is a function's output.
 * Function tools are strict unless they say otherwise, as the Responses API has them.
 */
function chosenTool(body: Record<string, unknown>, afterToolResult: boolean, strict: StrictRules | undefined): AnswerShape | undefined {
  const { tools, tool_choice: choice = 'auto' } = body;
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw OPENAI_FIELD_WORDS.wrongType('tools', 'array', tools);
  const functions = tools.map((tool, index) => {
    if (!isRecord(tool)) throw OPENAI_FIELD_WORDS.wrongType(`tools[${index}]`, 'object', tool);
    if (tool.type !== 'function') {
      throw new InvalidRequestError(
        `Invalid value: ${JSON.stringify(tool.type)}. serve runs tools of type 'function' only.`,
        `tools[${index}].type`,
        'invalid_value',
      );
    }
    if (typeof tool.name !== 'string')
      throw new InvalidRequestError("Missing required parameter: 'tools[0].name'.", `tools[${index}].name`);
    const parameters = tool.parameters ?? { type: 'object', properties: {}, additionalProperties: false };
    if (!isRecord(parameters)) throw OPENAI_FIELD_WORDS.wrongType(`tools[${index}].parameters`, 'object', parameters);
    if (tool.strict !== false && strict !== undefined) {
      checkStrict(strict, parameters as JsonSchema, `function '${tool.name}'`, `tools[${index}].parameters`, 'invalid_function_parameters');
    }
    return { kind: 'tool' as const, name: tool.name, schema: parameters as JsonSchema };
  });
  if (choice === 'none' || (functions.length === 0 && typeof choice === 'string')) return undefined;
  if (choice === 'required') return functions[0];
  if (choice === 'auto') return afterToolResult ? undefined : functions[0];
  const named = isRecord(choice) && choice.type === 'function' ? functions.find((tool) => tool.name === choice.name) : undefined;
  if (named === undefined) {
    throw new InvalidRequestError(
      "Invalid 'tool_choice': expected 'none', 'auto', 'required' or a function named in 'tools'.",
      'tool_choice',
    );
  }
  return named;
}
