import { connect } from 'node:net';

export interface JsonResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: any;
}

/** POSTs `body` (JSON, or a string sent as it is) and reads the JSON answer. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.json() };
}

export async function get(url: string, headers: Record<string, string> = {}): Promise<JsonResponse & { text: string }> {
  const response = await fetch(url, { headers });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: Object.fromEntries(response.headers), body, text };
}

export interface RawExchange {
  /** Everything the server sent, as text. */
  readonly response: string;
  /** Whether the server closed the connection (end or reset) within the wait. */
  readonly closedByServer: boolean;
  /** Bytes the client wrote. */
  readonly bytesWritten: number;
}

/**
 * Speaks HTTP over a bare socket: writes `head` (the request line and headers, blank line included)
 * and then `chunks` one by one, never more, and waits up to `waitMs` for the server to answer and
 * close. Lets a test send a body shorter than it declared, or one that never ends.
 */
export function rawExchange(url: string, head: string, chunks: readonly (string | Buffer)[], waitMs: number): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let response = '';
    let closedByServer = false;
    let bytesWritten = 0;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ response, closedByServer, bytesWritten });
    };
    const timer = setTimeout(finish, waitMs);
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (response += text));
    socket.on('end', () => {
      closedByServer = true;
      finish();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') {
        closedByServer = true;
        finish();
      } else {
        clearTimeout(timer);
        reject(error);
      }
    });
    socket.on('connect', () => {
      socket.write(head);
      bytesWritten += Buffer.byteLength(head);
      for (const chunk of chunks) {
        socket.write(chunk);
        bytesWritten += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      }
    });
  });
}

/** The status code and JSON body of a raw HTTP response (Content-Length or chunked). */
export function parseRaw(response: string): { status: number; headers: Record<string, string>; body: any } {
  const [head = '', rest = ''] = response.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  let text = rest;
  if (headers['transfer-encoding'] === 'chunked') {
    text = '';
    let at = 0;
    for (;;) {
      const end = rest.indexOf('\r\n', at);
      const size = Number.parseInt(rest.slice(at, end), 16);
      if (!(size > 0)) break;
      text += rest.slice(end + 2, end + 2 + size);
      at = end + 2 + size + 2;
    }
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text === '' ? undefined : JSON.parse(text) };
}
