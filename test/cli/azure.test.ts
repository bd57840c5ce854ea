// `--provider=azure` and Azure members of a providers file, against `serve`'s Azure URL form.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, makeTempDir, runCli, startServe } from './run-cli.ts';

const KEY = 'azure-e2e-5d1c8b7a-never-shown';
const ENV = { NP_AZURE_KEY: KEY, AZURE_OPENAI_API_KEY: undefined, OPENAI_API_KEY: undefined };

let serve: CliRun;
let url: string;
let temp: Awaited<ReturnType<typeof makeTempDir>>;

beforeAll(async () => {
  temp = await makeTempDir();
  ({ run: serve, url } = await startServe(['--rate=inf', '--min-latency=1ms', '--max-latency=3ms', `--api-keys=${KEY}`]));
});

afterAll(async () => {
  serve?.send('SIGTERM');
  await serve?.result;
  await temp?.remove();
});

describe('news-processor --provider=azure', () => {
  it('runs against a deployment: --base-url the endpoint, --model the deployment, --api-version', async () => {
    const result = await runCli(
      [
        '--provider=azure',
        `--base-url=${url}`,
        '--model=east-deploy',
        '--api-version=2024-10-21',
        '--api-key-env=NP_AZURE_KEY',
        '--articles=4',
        '--rate=inf',
        '--json',
      ],
      { env: ENV },
    );
    expect(result.code, result.stderr).toBe(0);
    const figures = JSON.parse(result.stdout);
    expect(figures).toMatchObject({ succeeded: 4, failed: 0, calls: 8 });
    expect(result.stderr).not.toContain(KEY);
  });

  it.each([
    [
      ['--provider=azure', '--model=d', '--api-version=v'],
      /^error: --provider=azure needs --base-url: its endpoint, which has no default$/,
    ],
    [
      ['--provider=azure', '--base-url=http://127.0.0.1:9', '--api-version=v'],
      /^error: --provider=azure needs --model: its deployment, which has no default$/,
    ],
    [
      ['--provider=azure', '--base-url=http://127.0.0.1:9', '--model=d'],
      /^error: --provider=azure needs --api-version \(e\.g\. 2024-10-21\)$/,
    ],
    [['--provider=openai', '--api-version=2024-10-21'], /^error: --api-version applies to --provider=azure only$/],
  ])('%j is one line, exit 2, before any call', async (args, message) => {
    const result = await runCli([...args, '--api-key-env=NP_AZURE_KEY', '--articles=1'], { env: ENV });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(message);
  });
});

describe('Azure members of a providers file', () => {
  const file = async (name: string, provider: Record<string, unknown>) => {
    const path = join(temp.dir, name);
    await writeFile(
      path,
      JSON.stringify({
        providers: [
          {
            name: 'azure-east',
            type: 'azure',
            apiKeyEnv: 'NP_AZURE_KEY',
            limits: [{ kind: 'requests', rate: 50, per: 'second' }],
            ...provider,
          },
        ],
      }),
    );
    return path;
  };

  it('take Azure’s own names: endpoint, deployment, apiVersion', async () => {
    const config = await file('azure.json', { endpoint: url, deployment: 'east-deploy', apiVersion: '2024-10-21' });
    const result = await runCli(['--config', config, '--articles=3', '--json'], { env: ENV });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ succeeded: 3, providers: [{ name: 'azure-east' }] });
  });

  it.each([
    ['no deployment', { endpoint: 'http://127.0.0.1:9', apiVersion: 'v' }, 'providers[0].deployment: expected given'],
    ['no apiVersion', { endpoint: 'http://127.0.0.1:9', deployment: 'd' }, 'providers[0].apiVersion: expected an API version'],
    ['no endpoint', { deployment: 'd', apiVersion: 'v' }, 'providers[0].endpoint: expected given'],
    [
      'baseUrl for endpoint',
      { baseUrl: 'http://127.0.0.1:9', endpoint: 'http://127.0.0.1:9', deployment: 'd', apiVersion: 'v' },
      'providers[0].baseUrl: expected nothing on an "azure" provider (it takes "endpoint")',
    ],
  ])('%s: one line naming the field, exit 2', async (name, provider, message) => {
    const config = await file(`${name.replaceAll(' ', '-')}.json`, provider);
    const result = await runCli(['--config', config, '--articles=1'], { env: ENV });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(message);
  });
});
