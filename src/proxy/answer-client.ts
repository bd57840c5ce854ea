import type { ServerResponse } from 'node:http';
import type { TokenUsage } from '../provider/provider.ts';
import { isStreamed, type Forwarded } from './forward.ts';
import { readAll, type UpstreamMember } from './upstream-member.ts';

/** Told the usage an answer reported (undefined when it said none: a stream cut short): what the budget settles on. */
export type Settle = (member: UpstreamMember, usage: TokenUsage | undefined) => void;

/** The headers of an upstream answer that go on to the client. */
const PASSED_HEADERS = ['content-type', 'cache-control'];

/**
 * Sends a member's 2xx answer on to the client: whole, or a stream event by event as it comes
 * (minus the usage chunk the proxy asked for and the client did not), then settles the member's
 * grant and the key's budget on the usage the answer reported.
 */
export async function answerClient(
  res: ServerResponse,
  forwarded: Extract<Forwarded, { kind: 'answer' }>,
  body: Record<string, unknown>,
  stream: boolean,
  headers: Record<string, string>,
  settle: Settle,
  /** Told a whole answer (not a stream) as it went to the client: what `--cache` keeps. */
  whole?: (answer: { contentType: string; text: string; usage: TokenUsage | undefined }) => void,
): Promise<void> {
  const { member, grant, response } = forwarded;
  const head: Record<string, string> = { ...headers };
  for (const name of PASSED_HEADERS) {
    const value = response.headers[name];
    if (typeof value === 'string') head[name] = value;
  }
  let usage: TokenUsage | undefined;
  try {
    if (!isStreamed(stream, response)) {
      const bytes = forwarded.whole ?? (await readAll(response.body))!;
      try {
        usage = member.wire.usageOf(JSON.parse(bytes.toString('utf8')));
      } catch {
        usage = undefined;
      }
      res.writeHead(response.status, head);
      res.end(bytes);
      if (whole !== undefined && usage !== undefined) {
        whole({ contentType: head['content-type'] ?? 'application/json', text: bytes.toString('utf8'), usage });
      }
      return;
    }
    const watch = member.wire.watchStream(body);
    res.writeHead(response.status, head);
    res.flushHeaders();
    let pending = '';
    response.body.setEncoding('utf8');
    for await (const chunk of response.body) {
      pending += chunk as string;
      let end = pending.indexOf('\n\n');
      let out = '';
      while (end >= 0) {
        const event = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (watch.pass(dataOf(event))) out += `${event}\n\n`;
        end = pending.indexOf('\n\n');
      }
      if (out !== '') res.write(out);
    }
    if (pending !== '') res.write(pending);
    usage = watch.usage();
    res.end();
  } finally {
    // A usage never reported (a stream cut off) may still have been billed in full: the grant keeps its estimate.
    if (usage !== undefined) grant.settle(usage);
    settle(member, usage);
  }
}

/** The `data:` of one server-sent event (its lines joined). */
function dataOf(event: string): string {
  if (event.startsWith('data: ') && !event.includes('\n')) return event.slice(6);
  return event
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
    .join('\n');
}
