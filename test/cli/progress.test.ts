import { describe, expect, it } from 'vitest';
import { batchProgressLine, progressLine } from '../../cmd/progress.ts';

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

  it('batchProgressLine() - a batch that has ended at the provider is no longer said to be in flight: its results are being read', () => {
    const batch = (status: string, ended: boolean, total: number, completed: number, failed = 0) => ({
      status,
      ended,
      total,
      completed,
      failed,
    });
    expect(batchProgressLine([batch('completed', true, 3, 3)])).toBe(
      'batches: 1 ended (completed), being read back, 3/3 rows done, 0 failed',
    );
    expect(
      batchProgressLine([
        batch('in_progress', false, 100, 40),
        batch('in_progress', false, 100, 10, 1),
        batch('expired', true, 50, 20, 30),
      ]),
    ).toBe('batches: 2 running (in_progress ×2), 1 ended (expired), being read back, 101/250 rows done, 31 failed');
  });
});
