// A run's identical requests are made once, however they are timed against the store's writes.
import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../src/clock.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import type { CallOptions, LlmRequest, LlmResponse, Provider } from '../../src/provider/provider.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { defineTasks } from '../../src/tasks/task-set.ts';
import { drive } from '../../src/testing/scripted-provider.ts';
import { MemoryCache } from './memory-cache.ts';

/** Answers in 30 ms, as a server nearby does; says its answer is shaped by the prompt alone. */
class TopicServer implements Provider {
  readonly name = 'server';
  readonly prompts: string[] = [];
  constructor(private readonly clock: ManualClock) {}

  answerIdentity(request: LlmRequest, maxOutputTokens: number): unknown {
    return { prompt: request.prompt, maxOutputTokens };
  }

  async call(request: LlmRequest, options: CallOptions = {}): Promise<LlmResponse> {
    this.prompts.push(request.prompt);
    await sleep(this.clock, 30, options.signal);
    return { output: { topic: `topic of ${request.prompt}` } };
  }
}

describe('runPipeline with an answer cache', () => {
  it('100 articles of 20 titles, a task that sees the title alone, 8 workers, a store that commits in 40 ms: 20 calls', async () => {
    const clock = new ManualClock();
    const server = new TopicServer(clock);
    const tasks = defineTasks([
      {
        name: 'topic',
        prompt: 'The topic of: {{title}}',
        schema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'], additionalProperties: false },
      },
    ]);
    const source = Array.from({ length: 100 }, (_, i) => ({ id: String(i), title: `Title ${i % 20}`, content: `Body ${i}.` }));
    const summary = await drive(
      clock,
      runPipeline({
        source,
        tasks,
        providers: [{ provider: server, limits: requestLimit(Infinity, 1) }],
        workers: 8,
        cache: new MemoryCache({ clock, ms: 40 }),
        clock,
      }),
    );
    expect(summary).toMatchObject({ succeeded: 100, calls: 20 });
    expect(new Set(server.prompts).size).toBe(20);
    expect(server.prompts).toHaveLength(20);
  });
});
