// A `serve` in a process of its own, to be killed: `node --import tsx serve-child.ts <rate> <burst>` prints
// `listening on URL` once it accepts connections, and answers at once within its quota.
import { LlmServer } from '../../src/server/index.ts';

const [rate, burst] = process.argv.slice(2).map(Number);
const server = new LlmServer({
  simulation: { minLatencyMs: 0, maxLatencyMs: 0 },
  rate: rate!,
  burst: burst!,
  tokensPerSecond: Number.POSITIVE_INFINITY,
});
process.stdout.write(`listening on ${await server.listen({ port: 0 })}\n`);
