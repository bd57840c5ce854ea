// A bare Node HTTP forwarder for `npm run bench:proxy`, in a process of its own: each request piped to the upstream
// over keep-alive connections, nothing read or decided. The floor no proxy goes under. Prints its port on stdout.
import { Agent, createServer, request } from 'node:http';

const upstreamPort = Number(process.argv[2]);
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const server = createServer((req, res) => {
  const out = request(
    { host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', () => res.destroy());
  req.pipe(out);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
