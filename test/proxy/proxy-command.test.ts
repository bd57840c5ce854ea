// `news-processor proxy` as a user runs it: its bad configs, one line each and exit 2; a start and a clean stop on SIGTERM.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'news-processor.js');
const FIXTURE = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'gateway.json'), 'utf8'));
const ENV = { ...process.env, OPENAI_API_KEY: 'x', ANTHROPIC_API_KEY: 'y', AGENTS_GATEWAY_KEY: 'sk-agents' };

function withConfig(change: (config: typeof FIXTURE) => void): string {
  const config = structuredClone(FIXTURE);
  change(config);
  const path = join(mkdtempSync(join(tmpdir(), 'proxy-')), 'gateway.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
}

const proxy = (config: string, env = ENV) =>
  spawnSync(process.execPath, [CLI, 'proxy', '--config', config], { env, encoding: 'utf8', timeout: 20_000 });

describe('news-processor proxy', () => {
  it.each([
    [
      'an unknown field',
      (c: typeof FIXTURE) => (c.keys[0].budget = 5),
      'keys[0].budget: unknown field (expected one of name, key, keyEnv, maxCostUsd, limits, weight, models)',
    ],
    [
      'a model routed nowhere',
      (c: typeof FIXTURE) => (c.models['gpt-4.1-mini'] = 'nobody'),
      'models.gpt-4.1-mini: expected one of the provider and pool names (openai-main, anthropic-main), got "nobody"',
    ],
    ['a bad weight', (c: typeof FIXTURE) => (c.keys[1].weight = 0), 'keys[1].weight: expected a number > 0, got 0'],
    [
      'a key model not in models',
      (c: typeof FIXTURE) => (c.keys[2].models = ['gpt-5']),
      'keys[2].models[0]: expected one of the models (gpt-4.1-mini, claude-haiku-4-5), got "gpt-5"',
    ],
    [
      'a simulated provider',
      (c: typeof FIXTURE) => (c.providers[0] = { name: 'sim', limits: [{ kind: 'requests', rate: 1 }] }),
      'providers[0].type: expected a vendor\'s API (openai, anthropic, azure), got "simulated"',
    ],
    [
      'a budget over an unpriced member',
      (c: typeof FIXTURE) => delete c.providers[1].price,
      'keys[0].maxCostUsd: expected a price on every provider its models reach, got none on providers[1] (anthropic-main, for claude-haiku-4-5)',
    ],
    [
      'two entries with one key',
      (c: typeof FIXTURE) => (c.keys[1].key = c.keys[0].key),
      'keys[1].key: expected a key no other entry has, got the key of another',
    ],
  ])('refuses %s in one line naming the field, exit 2', (_name, change, message) => {
    const path = withConfig(change);
    const result = proxy(path);
    expect(result.stderr).toBe(`error: ${path}: ${message}\n`);
    expect(result.status).toBe(2);
    expect(result.stderr).not.toContain('sk-gw');
  });

  it('refuses a key variable that is not set', () => {
    const result = proxy(join(import.meta.dirname, '..', '..', 'fixtures', 'gateway.json'), { ...ENV, AGENTS_GATEWAY_KEY: '' });
    expect(result.stderr).toMatch(/keys\[2\]\.keyEnv: AGENTS_GATEWAY_KEY is not set\n$/);
    expect(result.status).toBe(2);
  });

  it('prints where it listens, and stops on SIGTERM with exit 0', async () => {
    const child = spawn(process.execPath, [CLI, 'proxy', '--config', join(import.meta.dirname, '..', '..', 'fixtures', 'gateway.json')], {
      env: ENV,
    });
    const line = await new Promise<string>((resolve) => child.stdout.once('data', (data: Buffer) => resolve(data.toString())));
    expect(line).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n$/);
    const health = await fetch(`${line.slice('listening on '.length).trim()}/healthz`);
    expect(health.status).toBe(200);
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
  });
});
