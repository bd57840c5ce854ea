// The proxy for `npm run bench:proxy`, in a process of its own, over the instant upstream: one key with a budget and
// limits that never bind, one member. Prints its port on stdout.
import { ProxyServer, parseGatewayConfig } from '../../src/proxy/index.ts';

const upstreamPort = Number(process.argv[2]);
const config = parseGatewayConfig(
  {
    providers: [
      {
        name: 'instant',
        type: 'openai',
        baseUrl: `http://127.0.0.1:${upstreamPort}/v1`,
        model: 'bench',
        limits: [{ kind: 'requests', rate: 'inf' }],
        price: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
      },
    ],
    models: { bench: 'instant' },
    keys: [{ name: 'bench', key: 'sk-bench', maxCostUsd: 1_000_000, limits: [{ kind: 'requests', rate: 1_000_000, burst: 1_000_000 }] }],
  },
  { env: {} },
);
const proxy = await ProxyServer.create({ config, apiKeys: { instant: 'upstream-key' } });
const url = await proxy.listen({ port: 0 });
process.stdout.write(`${new URL(url).port}\n`);
// A clean exit on SIGINT (what --cpu-prof needs to write its profile).
process.once('SIGINT', () => process.exit(0));
