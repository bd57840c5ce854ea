import { describe, expect, it } from 'vitest';
import { progressLine } from '../../cmd/progress.ts';

describe('the progress line (cmd/progress.ts)', () => {
  it('progressLine() - the run’s figures, then each pool with its members’ calls and any that is down or dropped', () => {
    const pools = [
      {
        name: 'gpt',
        members: [
          { name: 'key-a', calls: 12, state: 'up' as const },
          { name: 'key-b', calls: 30, state: 'up' as const },
          { name: 'azure-east', calls: 2, state: 'down' as const },
        ],
      },
      { name: 'claude-pool', members: [{ name: 'claude', calls: 0, state: 'dropped' as const }] },
    ];
    expect(progressLine(4000, 20, 40, 44, 1, pools)).toBe(
      'elapsed 4s · 20/40 articles 50% · 44 calls · 11.0 calls/s · 1 failed · eta 4s · gpt[key-a 12 key-b 30 azure-east 2 down] · claude-pool[claude 0 dropped]',
    );
    expect(progressLine(4000, 20, 40, 44, 1)).toBe('elapsed 4s · 20/40 articles 50% · 44 calls · 11.0 calls/s · 1 failed · eta 4s');
  });
});
