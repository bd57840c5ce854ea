// One of several processes sharing a provider quota through Redis: runs the pipeline over its own
// articles with RedisLimits, against a provider that POSTs each call to a counting server, saying
// when it sent it.
// Started with IPC by shared-quota.ts: it connects and warms up, says 'ready', waits for 'go',
// runs, and sends back its summary.
import { connectRedis, RedisLimits } from '../../src/redis/index.ts';
import {
  generateArticles,
  RateLimitError,
  requestLimit,
  runPipeline,
  type LlmRequest,
  type LlmResponse,
  type Provider,
} from '../../src/index.ts';

export interface QuotaChildSettings {
  readonly redisUrl: string;
  readonly serverUrl: string;
  readonly quotaKey: string;
  readonly name: string;
  readonly articles: number;
  readonly workers: number;
  readonly rate: number;
  readonly burst: number;
}

/** Each call is one POST to the counting server; a 429 there is a RateLimitError here. */
class CountingProvider implements Provider {
  readonly name = 'counting';

  constructor(
    private readonly url: string,
    private readonly sender: string,
  ) {}

  async call(request: LlmRequest, options: { signal?: AbortSignal | undefined } = {}): Promise<LlmResponse> {
    // When the call left, on the clock every process of the machine shares (wall time at process
    // start plus the monotonic clock since): what the server judges it by.
    const sentAtMs = performance.timeOrigin + performance.now();
    const response = await fetch(this.url, {
      method: 'POST',
      body: JSON.stringify({ sender: this.sender, sentAtMs, articleId: request.articleId, task: request.task }),
      signal: options.signal,
    });
    await response.arrayBuffer();
    if (response.status === 429) throw new RateLimitError('rate limited (429)', { retryAfterMs: 50 });
    return request.task === 'summarize'
      ? { output: { summary: `summary of ${request.articleId}`, keywords: ['k'] } }
      : { output: { sentiment: 'neutral', score: 0 } };
  }
}

const settings = JSON.parse(process.argv[2]!) as QuotaChildSettings;
const connection = await connectRedis(settings.redisUrl);
const run = (path: string, quotaKey: string, articles: number) =>
  runPipeline({
    source: generateArticles(articles, { seed: articles }),
    providers: [
      {
        provider: new CountingProvider(`${settings.serverUrl}${path}`, settings.name),
        limits: new RedisLimits({ connection, limits: requestLimit(settings.rate, settings.burst), quotaKey }),
      },
    ],
    workers: settings.workers,
    timeoutMs: 30_000,
  });
// The whole way once, off the books: a cold first call (compiling, connecting) leaves late, and a
// server whose quota starts full at the first arrival would then run that much behind ours.
await run('/warm-up', `${settings.quotaKey}-warm-up`, settings.workers);
process.send!({ type: 'ready' });
await new Promise<void>((resolve) => process.once('message', () => resolve()));
const summary = await run('/call', settings.quotaKey, settings.articles);
// Disconnecting before the message is written would drop it.
await new Promise((resolve) => process.send!({ type: 'summary', summary }, resolve));
await connection.close();
process.disconnect();
