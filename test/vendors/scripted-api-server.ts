import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { valueForSchema } from '../../src/simulator/schema-value.ts';

/**
 * How the scripted server answers a request: as the API would when all is well (`ok`), or with one
 * of the failures a real API sends. `NAME-once` fails the first request with that prompt only.
 */
export type Cue =
  | 'ok'
  | '401'
  | '403'
  | '400'
  | '404'
  | 'quota'
  | 'billing'
  | '429'
  | '500'
  | '503-no-retry'
  | '529'
  | 'malformed'
  | 'off-schema'
  | 'truncated'
  | 'refusal'
  | 'content-filter'
  | 'slow'
  | 'reset';

export type Vendor = 'openai' | 'anthropic';

export interface RecordedRequest {
  readonly vendor: Vendor;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
  readonly cue: Cue;
}

export interface ScriptedApiServer {
  /** `http://127.0.0.1:PORT`: Anthropic's base URL; OpenAI's is this plus `/v1`. */
  readonly url: string;
  readonly openAiUrl: string;
  /** Every request that reached a route, in arrival order. */
  readonly requests: RecordedRequest[];
  /** The most requests each route had in flight at once. */
  readonly peakInFlight: Record<Vendor, number>;
  /** The cue for requests whose prompt names none (`cue:NAME` anywhere in the prompt). Default `ok`. */
  cue: Cue;
  close(): Promise<void>;
}

export interface ScriptedApiServerOptions {
  /** The key the server accepts; any other gets a 401 that quotes it back, as a careless server might. */
  readonly apiKey: string;
  /** How long a `slow` answer takes, in ms. Default 5000. */
  readonly slowMs?: number;
  /** How long an `ok` answer takes, in ms. Default 0. */
  readonly okDelayMs?: number;
}

export const RATE_LIMIT_HEADERS: Readonly<Record<Vendor, Record<string, string>>> = {
  openai: { 'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '42', 'x-ratelimit-reset-requests': '1s' },
  anthropic: { 'anthropic-ratelimit-requests-limit': '100', 'anthropic-ratelimit-requests-remaining': '42' },
};

export const USAGE = { inputTokens: 21, outputTokens: 9 };

/** A valid answer to each task. */
const ANSWERS: Readonly<Partial<Record<string, unknown>>> = {
  summarize: { summary: 'A scripted summary.', keywords: ['scripted', 'server'] },
  sentiment: { sentiment: 'positive', score: 0.5 },
};

/**
 * A raw `node:http` server speaking just enough of the OpenAI chat completions API
 * (`POST /v1/chat/completions`) and the Anthropic Messages API (`POST /v1/messages`) to answer
 * each request as its cue says. Listens on a free loopback port.
 */
export async function startScriptedApiServer(options: ScriptedApiServerOptions): Promise<ScriptedApiServer> {
  const { apiKey, slowMs = 5000, okDelayMs = 0 } = options;
  const inFlight: Record<Vendor, number> = { openai: 0, anthropic: 0 };
  const peakInFlight: Record<Vendor, number> = { openai: 0, anthropic: 0 };
  const seenPrompts = new Set<string>();
  const requests: RecordedRequest[] = [];
  const state = { cue: 'ok' as Cue };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const vendor: Vendor | undefined =
        req.method === 'POST' && req.url === '/v1/chat/completions'
          ? 'openai'
          : req.method === 'POST' && req.url === '/v1/messages'
            ? 'anthropic'
            : undefined;
      if (vendor === undefined) {
        send(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const prompt = promptOf(body);
      let cue = cueOf(prompt) ?? state.cue;
      // Anthropic's SDK sends its key as a bearer token too; its API also takes `x-api-key`.
      const key = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '');
      if (key !== apiKey) cue = '401';
      requests.push({ vendor, headers: req.headers, body, cue });
      if (/cue:[\w-]+-once\b/.test(prompt)) {
        if (seenPrompts.has(prompt)) cue = 'ok';
        seenPrompts.add(prompt);
      }
      inFlight[vendor]++;
      peakInFlight[vendor] = Math.max(peakInFlight[vendor], inFlight[vendor]);
      res.on('close', () => inFlight[vendor]--);
      answer(vendor, cue, body, String(key), req, res, cue === 'ok' ? okDelayMs : slowMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    openAiUrl: `${url}/v1`,
    requests,
    peakInFlight,
    get cue() {
      return state.cue;
    },
    set cue(cue: Cue) {
      state.cue = cue;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback URL nothing listens on: a port that was free a moment ago. */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function promptOf(body: Record<string, unknown>): string {
  const messages = body.messages as { content?: unknown }[] | undefined;
  const content = messages?.[0]?.content;
  return typeof content === 'string' ? content : '';
}

function cueOf(prompt: string): Cue | undefined {
  return /cue:([\w-]+)/.exec(prompt)?.[1]?.replace(/-once$/, '') as Cue | undefined;
}

/** The schema the request asks its answer to fit: OpenAI's `json_schema`, Anthropic's forced tool's input. */
function schemaOf(vendor: Vendor, body: Record<string, unknown>): Record<string, unknown> {
  if (vendor === 'openai') return (body.response_format as { json_schema: { schema: Record<string, unknown> } }).json_schema.schema;
  return (body.tools as { input_schema: Record<string, unknown> }[])[0]!.input_schema;
}

function taskOf(vendor: Vendor, body: Record<string, unknown>): string {
  if (vendor === 'openai') return (body.response_format as { json_schema: { name: string } }).json_schema.name;
  return (body.tool_choice as { name: string }).name;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function answer(
  vendor: Vendor,
  cue: Cue,
  body: Record<string, unknown>,
  key: string,
  req: IncomingMessage,
  res: ServerResponse,
  delayMs: number,
): void {
  const fail = (status: number, type: string, message: string, headers: Record<string, string> = {}) =>
    send(
      res,
      status,
      vendor === 'openai' ? { error: { message, type, param: null, code: type } } : { type: 'error', error: { type, message } },
      headers,
    );
  const task = taskOf(vendor, body);
  switch (cue) {
    case '401':
      fail(401, vendor === 'openai' ? 'invalid_api_key' : 'authentication_error', `Incorrect API key provided: ${key}`);
      break;
    case '403':
      fail(403, 'permission_error', `The key ${key} may not use this model`);
      break;
    case '400':
      fail(400, 'invalid_request_error', `Invalid schema for '${task}': the scripted server refuses it`);
      break;
    case '404':
      fail(404, 'not_found_error', `The model does not exist or the key ${key} may not see it`);
      break;
    case 'quota':
      fail(429, 'insufficient_quota', 'You exceeded your current quota, please check your plan and billing details.');
      break;
    case 'billing':
      fail(402, 'billing_error', 'Your credit balance is too low.');
      break;
    case '429':
      fail(429, vendor === 'openai' ? 'rate_limit_exceeded' : 'rate_limit_error', 'Rate limit reached', {
        ...RATE_LIMIT_HEADERS[vendor],
        ...(vendor === 'openai' ? { 'retry-after-ms': '120' } : { 'retry-after': '1' }),
      });
      break;
    case '500':
      fail(500, vendor === 'openai' ? 'server_error' : 'api_error', 'The server had an error');
      break;
    case '503-no-retry':
      fail(503, 'service_unavailable', 'Down for maintenance', { 'x-should-retry': 'false' });
      break;
    case '529':
      fail(529, 'overloaded_error', 'Overloaded');
      break;
    case 'malformed':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id": "cut", "choices": [');
      break;
    case 'reset':
      req.socket.resetAndDestroy();
      break;
    case 'slow':
    case 'ok': {
      const timer = setTimeout(() => succeed(vendor, task, ANSWERS[task] ?? valueForSchema(schemaOf(vendor, body)), body, res), delayMs);
      res.on('close', () => clearTimeout(timer));
      break;
    }
    case 'off-schema':
      succeed(vendor, task, { summary: 3 }, body, res);
      break;
    case 'truncated':
    case 'refusal':
    case 'content-filter':
      send(res, 200, vendor === 'openai' ? openAiEnding(cue) : anthropicEnding(cue, body), RATE_LIMIT_HEADERS[vendor]);
      break;
  }
}

function succeed(vendor: Vendor, task: string, value: unknown, body: Record<string, unknown>, res: ServerResponse): void {
  const usage = vendor === 'openai' ? openAiUsage() : anthropicUsage();
  const reply =
    vendor === 'openai'
      ? {
          id: 'chatcmpl-scripted',
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: JSON.stringify(value), refusal: null },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
          usage,
        }
      : {
          id: 'msg_scripted',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [{ type: 'tool_use', id: 'toolu_scripted', name: task, input: value }],
          stop_reason: 'tool_use',
          stop_sequence: null,
          usage,
        };
  send(res, 200, reply, RATE_LIMIT_HEADERS[vendor]);
}

function openAiUsage() {
  return { prompt_tokens: USAGE.inputTokens, completion_tokens: USAGE.outputTokens, total_tokens: USAGE.inputTokens + USAGE.outputTokens };
}

function anthropicUsage() {
  return { input_tokens: USAGE.inputTokens, output_tokens: USAGE.outputTokens };
}

function openAiEnding(cue: 'truncated' | 'refusal' | 'content-filter'): unknown {
  const message =
    cue === 'refusal'
      ? { role: 'assistant', content: null, refusal: "I can't help with that." }
      : { role: 'assistant', content: cue === 'truncated' ? '{"summary": "The' : null, refusal: null };
  const finish = cue === 'truncated' ? 'length' : cue === 'content-filter' ? 'content_filter' : 'stop';
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: openAiUsage(),
  };
}

function anthropicEnding(cue: 'truncated' | 'refusal' | 'content-filter', body: Record<string, unknown>): unknown {
  const stop = cue === 'truncated' ? 'max_tokens' : 'refusal';
  const content = cue === 'truncated' ? [{ type: 'text', text: 'The article' }] : [];
  return { id: 'msg_scripted', type: 'message', role: 'assistant', model: body.model, content, stop_reason: stop, usage: anthropicUsage() };
}
