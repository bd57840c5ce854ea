// What the tests of serve's two Batch APIs share: a server of their own on a ManualClock, closed
// after each test, and the built-in tasks' requests for a few articles, by custom id.
import { afterEach } from 'vitest';
import { ManualClock } from '../../src/mechanisms.ts';
import type { LlmRequest } from '../../src/provider/provider.ts';
import { LlmServer, type LlmServerOptions } from '../../src/server/index.ts';
import { builtinRequest } from '../requests.ts';

export const ARTICLES = [
  { id: 'a1', title: 'Rates held', text: 'The central bank held rates steady. Markets rallied on the news.' },
  { id: 'a2', title: 'Storm damage', text: 'A storm flooded the old town. Repairs will take months, officials warned.' },
  { id: 'a3', title: 'Team wins', text: 'The home team won the final in extra time. Fans celebrated all night.' },
];

/** Both built-in tasks for each of `articles`, as the pipeline asks them, by custom id (`a1-summarize`). */
export function requestsOf(articles: readonly (typeof ARTICLES)[number][] = ARTICLES): Map<string, LlmRequest> {
  const byId = new Map<string, LlmRequest>();
  for (const article of articles) {
    for (const task of ['summarize', 'sentiment'] as const) {
      byId.set(`${article.id}-${task}`, builtinRequest(task, article.id, article.title, article.text));
    }
  }
  return byId;
}

/**
 * A function that starts a server (batches taking 10 s unless `options` say otherwise) on a
 * ManualClock of its own, with a `client` of it made by `clientOf`; every server started is closed
 * after each test. Call it at a test file's top level.
 */
export function batchServers<C>(
  clientOf: (url: string) => C,
): (options?: LlmServerOptions) => Promise<{ url: string; clock: ManualClock; client: C }> {
  const servers: LlmServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });
  return async (options = {}) => {
    const clock = new ManualClock();
    const server = new LlmServer({ batchDurationMs: 10_000, clock, ...options });
    servers.push(server);
    const url = await server.listen({ port: 0 });
    return { url, clock, client: clientOf(url) };
  };
}
