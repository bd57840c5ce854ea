import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowFirst from './test/sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    allowOnly: false,
    // A file per core, two on a 2-core machine: vitest's default (cores − 1) ran one file at a time
    // there, while most of the suite waits — on timers, servers, Redis and the commands it spawns —
    // rather than computes. Each file still runs in a process of its own (forks).
    maxWorkers: Math.max(2, availableParallelism()),
    sequence: { sequencer: SlowFirst },
  },
});
