import { describe, expect, it } from 'vitest';
import { parseProvidersConfig } from '../../src/index.ts';

const provider = (extra: Record<string, unknown>) => ({ providers: [{ name: 'p', limits: [{ kind: 'requests', rate: 1 }], ...extra }] });

describe('the providers file: quotaKey', () => {
  it('names the shared quota of a provider, absent by default (the provider name then)', () => {
    expect(parseProvidersConfig(provider({ quotaKey: 'team-key' })).providers[0]!.quotaKey).toBe('team-key');
    expect(parseProvidersConfig(provider({})).providers[0]!.quotaKey).toBeUndefined();
  });

  it.each([
    [{ quotaKey: 'a{b}' }, 'config: providers[0].quotaKey: expected a non-empty name without { or }, got "a{b}"'],
    [{ quotaKey: '' }, 'config: providers[0].quotaKey: expected a non-empty name without { or }, got ""'],
    [{ quotaKey: 3 }, 'config: providers[0].quotaKey: expected a string, got 3'],
  ])('refuses %j in one line', (extra, message) => {
    expect(() => parseProvidersConfig(provider(extra))).toThrow(message);
  });
});
