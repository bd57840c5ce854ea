import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { providerSetups } from '../../cmd/provider-setup.ts';
import type { RunFlags } from '../../cmd/run-options.ts';

/** The flags a run without any given: what `providerSetups` reads of them. */
const FLAGS = {
  minLatency: 200,
  maxLatency: 800,
  profile: 'default',
  seed: 1,
  timeout: 5000,
  callTimeout: Infinity,
  maxOutputTokens: 256,
  adaptive: false,
  syncHeaders: false,
  breakerThreshold: 10,
  breakerCooldown: 2000,
} as unknown as RunFlags;

describe('providerSetups() - the call timeout', () => {
  it('is --call-timeout for one provider from the flags, and none unless given', async () => {
    expect((await providerSetups({ ...FLAGS, callTimeout: 1500 }, 3, 3)).providers[0]!.callTimeoutMs).toBe(1500);
    expect((await providerSetups(FLAGS, 3, 3)).providers[0]!.callTimeoutMs).toBe(Infinity);
  });

  it("is a providers-file entry's callTimeout, else --call-timeout", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'np-call-timeout-'));
    try {
      const config = join(dir, 'providers.json');
      const limits = [{ kind: 'requests', rate: 5 }];
      await writeFile(
        config,
        JSON.stringify({
          providers: [
            { name: 'own', limits, callTimeout: '1s' },
            { name: 'flag', limits },
          ],
        }),
      );
      const { providers } = await providerSetups({ ...FLAGS, config, callTimeout: 2000 }, 3, 3);
      expect(providers.map((p) => p.callTimeoutMs)).toEqual([1000, 2000]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
