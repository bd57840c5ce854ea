import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Two copies of the package loaded at once — two versions in node_modules, a provider published
// with its own copy — each with its own classes: `instanceof` fails across them, the guards the
// package keeps must not. The second copy is the compiled package copied whole into a folder of
// its own (the global setup has built dist/), so every module of it is a separate instance.

type Root = typeof import('../../src/index.ts');
type Mechanisms = typeof import('../../src/mechanisms.ts');

const DIST = fileURLToPath(new URL('../../dist/src/', import.meta.url));
const NODE_MODULES = fileURLToPath(new URL('../../node_modules', import.meta.url));

let folder: string;
let one: { root: Root; mechanisms: Mechanisms };
let other: { root: Root; mechanisms: Mechanisms };

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'news-processor-copy-'));
  cpSync(DIST, join(folder, 'src'), { recursive: true });
  writeFileSync(join(folder, 'package.json'), '{ "type": "module" }\n');
  symlinkSync(NODE_MODULES, join(folder, 'node_modules'));
  const load = async (base: string) => ({
    root: (await import(pathToFileURL(join(base, 'index.js')).href)) as Root,
    mechanisms: (await import(pathToFileURL(join(base, 'mechanisms.js')).href)) as Mechanisms,
  });
  one = await load(DIST);
  other = await load(join(folder, 'src'));
});

afterAll(() => {
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
});

describe('the guards the package keeps, with two copies of it loaded', () => {
  const cases: readonly {
    readonly guard: string;
    readonly build: () => Error;
    readonly check: (error: unknown) => boolean;
    readonly of: () => unknown;
  }[] = [
    {
      guard: 'isProviderError',
      build: () => new other.root.RateLimitError('slow down', { retryAfterMs: 5 }),
      check: (error) => one.root.isProviderError(error),
      of: () => one.root.RateLimitError,
    },
    {
      guard: 'isLimiterUnavailableError',
      build: () => new other.mechanisms.LimiterUnavailableError('redis went away'),
      check: (error) => one.mechanisms.isLimiterUnavailableError(error),
      of: () => one.mechanisms.LimiterUnavailableError,
    },
    {
      guard: 'isBudgetExhaustedError',
      build: () => new other.root.BudgetExhaustedError(1, 0.99, 0.02),
      check: (error) => one.root.isBudgetExhaustedError(error),
      of: () => one.root.BudgetExhaustedError,
    },
    {
      guard: 'isLimitTooSmallError',
      build: () => new other.root.LimitTooSmallError('tokens', 5000, 4000),
      check: (error) => one.root.isLimitTooSmallError(error),
      of: () => one.root.LimitTooSmallError,
    },
    {
      guard: 'isMaxWaitExceededError',
      build: () => new other.mechanisms.MaxWaitExceededError(250, 100),
      check: (error) => one.mechanisms.isMaxWaitExceededError(error),
      of: () => one.mechanisms.MaxWaitExceededError,
    },
  ];

  it.each(cases)('$guard recognises the error the other copy built, where instanceof does not', ({ build, check, of }) => {
    const error = build();
    expect(error instanceof (of() as new () => Error)).toBe(false);
    expect(check(error)).toBe(true);
  });

  it.each(cases)('$guard answers false for look-alikes and non-errors', ({ build, check }) => {
    const error = build();
    expect(check(Object.assign(new Error(error.message), { name: error.name }))).toBe(false);
    expect(check({ name: error.name, message: error.message })).toBe(false);
    for (const value of [undefined, null, error.name, 42]) expect(check(value)).toBe(false);
  });

  it('isProviderError covers every provider failure of the other copy; each still says which by name', () => {
    const failures = [
      new other.root.AuthenticationError('refused'),
      new other.root.MalformedOutputError('not JSON'),
      new other.root.TimeoutError(),
    ];
    for (const error of failures) expect(one.root.isProviderError(error), error.name).toBe(true);
    expect(failures.map((error) => error.name)).toEqual(['AuthenticationError', 'MalformedOutputError', 'TimeoutError']);
  });
});

describe('a run of one copy, with a provider built on the other', () => {
  it("stops on the other copy's AuthenticationError, as on its own", async () => {
    const provider = {
      name: 'elsewhere',
      call: async () => {
        throw new other.root.AuthenticationError('the key was refused (401)', { status: 401 });
      },
    };
    const summary = await one.root.runPipeline({
      source: one.root.generateArticles(20),
      total: 20,
      providers: [{ provider, limits: one.root.requestLimit(Infinity, 1) }],
      workers: 2,
    });
    expect(summary.stoppedBy).toMatchObject({ by: 'provider', provider: 'elsewhere', type: 'AuthenticationError' });
    expect(summary.succeeded).toBe(0);
    expect(summary.notStarted).toBeGreaterThan(0);
  });

  it("counts the other copy's RateLimitError as rate-limited, and retries it", async () => {
    const simulated = new one.root.SimulatedProvider({ minLatencyMs: 0, maxLatencyMs: 0 });
    let refused = 0;
    const provider = {
      name: 'elsewhere',
      call: async (...args: Parameters<typeof simulated.call>) => {
        if (refused < 2) {
          refused += 1;
          throw new other.root.RateLimitError('slow down', { retryAfterMs: 1 });
        }
        return simulated.call(...args);
      },
    };
    const summary = await one.root.runPipeline({
      source: one.root.generateArticles(2),
      providers: [{ provider, limits: one.root.requestLimit(Infinity, 1) }],
      workers: 1,
    });
    expect(summary).toMatchObject({ articles: 2, succeeded: 2, rateLimited: 2 });
  });
});
