// An instant upstream for `npm run bench:proxy`, in a process of its own: OpenAI's chat completions answered at once,
// whole or streamed, with their usage. Prints its port on stdout.
import { createServer } from 'node:http';

const WHOLE = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Markets rose on the news.', refusal: null }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
});

const chunk = (choices: unknown[], usage: unknown) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench', choices, usage })}\n\n`;

const STREAM = [
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], null),
  ...['Markets', ' rose', ' on', ' the', ' news', '.'].map((piece) =>
    chunk([{ index: 0, delta: { content: piece }, finish_reason: null }], null),
  ),
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }], null),
  chunk([], { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 }),
  'data: [DONE]\n\n',
].join('');

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (part: Buffer) => chunks.push(part));
  req.on('end', () => {
    const streamed = Buffer.concat(chunks).includes('"stream":true');
    res.writeHead(200, { 'content-type': streamed ? 'text/event-stream' : 'application/json' });
    res.end(streamed ? STREAM : WHOLE);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
