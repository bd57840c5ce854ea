// The official SDKs pointed at the proxy, which forwards to `serve`: what a team's code sees.
import { afterEach, describe, expect, it } from 'vitest';
import { anthropic, gateway, openai, stopAll, twoVendors, upstream } from './gateway.ts';

afterEach(stopAll);

async function team() {
  const up = await upstream();
  const { url } = await gateway({
    providers: twoVendors(up.url, up.url),
    models: { fast: 'oa', claude: 'an' },
    keys: [
      { name: 'team-a', key: 'sk-team-a', maxCostUsd: 1 },
      { name: 'team-b', key: 'sk-team-b', models: ['claude'] },
    ],
  });
  return url;
}

describe('proxy with the official SDKs', () => {
  it('answers an OpenAI client, whole and streamed', async () => {
    const url = await team();
    const client = openai(url, 'sk-team-a');
    const whole = await client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'Say hi.' }] });
    expect(whole.choices[0]?.message.content).toEqual(expect.any(String));
    expect(whole.usage?.completion_tokens).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'Say hi.' }], stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    // The usage chunk the proxy asked for is not the client's: it did not ask.
    expect(chunks.every((chunk) => chunk.choices.length > 0)).toBe(true);
  });

  it('answers an Anthropic client, whole and streamed', async () => {
    const url = await team();
    const client = anthropic(url, 'sk-team-b');
    const whole = await client.messages.create({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'Say hi.' }] });
    expect(whole.content[0]?.type).toBe('text');
    const stream = client.messages.stream({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'Say hi.' }] });
    const final = await stream.finalMessage();
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it("answers bad input in the client API's shape", async () => {
    const url = await team();
    await expect(
      openai(url, 'sk-nobody').chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 401 });
    await expect(
      openai(url, 'sk-team-a').chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    await expect(
      openai(url, 'sk-team-b').chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 403 });
    await expect(
      openai(url, 'sk-team-a').chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('POST /v1/messages'),
    });
    await expect(
      anthropic(url, 'sk-nobody').messages.create({ model: 'claude', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 401,
      error: { type: 'error', error: { type: 'authentication_error' } },
    });
  });
});
