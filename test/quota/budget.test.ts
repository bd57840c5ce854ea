import { describe, expect, it } from 'vitest';
import { BudgetExhaustedError, LocalBudget, NANO_USD } from '../../src/quota/budget.ts';

const usd = (amount: number) => Math.round(amount * NANO_USD);

describe('LocalBudget.reserve', () => {
  it('holds what fits at once, and refuses what does not with nothing held: nothing would come back', async () => {
    const budget = new LocalBudget({ maxUsd: 1 });
    const hold = (await budget.reserve(usd(0.6)))!;
    expect(budget.heldUsd).toBeCloseTo(0.6, 9);
    hold.settle(usd(0.5));
    expect(budget.spentUsd).toBeCloseTo(0.5, 9);
    expect(budget.heldUsd).toBe(0);
    expect(await budget.reserve(usd(0.6))).toBeUndefined();
    expect(await budget.reserve(usd(0.5))).toBeDefined();
  });

  it('keeps what a call of unknown fate may have cost apart from what was spent, counted against the budget all the same', async () => {
    const budget = new LocalBudget({ maxUsd: 1, spentUsd: 0.1, unknownUsd: 0.2 });
    const lost = (await budget.reserve(usd(0.3)))!;
    // Perhaps billed: its whole worst case kept, not as spent; more than the hold is never kept.
    lost.settle(0, usd(0.5));
    expect(budget.spentUsd).toBeCloseTo(0.1, 9);
    expect(budget.unknownUsd).toBeCloseTo(0.5, 9);
    expect(budget.heldUsd).toBe(0);
    // 0.1 spent and 0.5 unknown leave 0.4: 0.41 never fits.
    expect(await budget.reserve(usd(0.41))).toBeUndefined();
    const unsent = (await budget.reserve(usd(0.4)))!;
    // Never sent: all of it back.
    unsent.settle(0, 0);
    expect(budget.spentUsd + budget.unknownUsd).toBeCloseTo(0.6, 9);
    expect(() => new LocalBudget({ maxUsd: 1, unknownUsd: -1 })).toThrow(/unknownUsd/);
  });

  it('waits for holds in flight to settle when they leave no room, then holds', async () => {
    const budget = new LocalBudget({ maxUsd: 1 });
    const first = (await budget.reserve(usd(0.7)))!;
    let second: unknown = 'waiting';
    const waiting = budget.reserve(usd(0.7)).then((hold) => (second = hold));
    await Promise.resolve();
    expect(second).toBe('waiting');
    // Settled at a fraction of its worst case: the second now fits.
    first.settle(usd(0.03));
    await waiting;
    expect(second).toBeDefined();
    expect(budget.spentUsd).toBeCloseTo(0.03, 9);
    expect(budget.heldUsd).toBeCloseTo(0.7, 9);
  });

  it('refuses a waiting hold once every hold has settled and what is spent leaves no room', async () => {
    const budget = new LocalBudget({ maxUsd: 1 });
    const first = (await budget.reserve(usd(0.7)))!;
    const waiting = budget.reserve(usd(0.7));
    first.settle(usd(0.5));
    expect(await waiting).toBeUndefined();
    expect(budget.spentUsd).toBeCloseTo(0.5, 9);
  });

  it('serves the holds waiting first come, first served: a small one does not pass a large one ahead of it', async () => {
    const budget = new LocalBudget({ maxUsd: 1 });
    const first = (await budget.reserve(usd(0.9)))!;
    const order: string[] = [];
    const large = budget.reserve(usd(0.8)).then(() => order.push('large'));
    const small = budget.reserve(usd(0.05)).then(() => order.push('small'));
    first.settle(0);
    await Promise.all([large, small]);
    expect(order).toEqual(['large', 'small']);
  });

  it('an aborted wait rejects with the signal’s reason, holding nothing, and the next in line is served', async () => {
    const budget = new LocalBudget({ maxUsd: 1 });
    const first = (await budget.reserve(usd(0.9)))!;
    const controller = new AbortController();
    const aborted = budget.reserve(usd(0.5), { signal: controller.signal });
    const next = budget.reserve(usd(0.1));
    controller.abort(new Error('deadline'));
    await expect(aborted).rejects.toThrow('deadline');
    expect(await next).toBeDefined();
    first.settle(0);
    expect(budget.heldUsd).toBeCloseTo(0.1, 9);
  });

  it('a second settle changes nothing', async () => {
    const budget = new LocalBudget({ maxUsd: 1 });
    const hold = (await budget.reserve(usd(0.5)))!;
    hold.settle(usd(0.2));
    hold.settle(usd(0.5));
    expect(budget.spentUsd).toBeCloseTo(0.2, 9);
    expect(budget.heldUsd).toBe(0);
  });
});

describe('BudgetExhaustedError', () => {
  it('says what is spent, what calls of unknown fate may have cost and what is held only when something is', () => {
    expect(new BudgetExhaustedError(10, 9.2, 1.35).message).toBe(
      'the budget of $10.00 cannot cover the next call (up to $1.35): $9.20 of it is spent',
    );
    expect(new BudgetExhaustedError(10, 5, 1.35, 4.5).message).toBe(
      'the budget of $10.00 cannot cover the next call (up to $1.35): $5.00 of it is spent, $4.50 held by calls in flight',
    );
    expect(new BudgetExhaustedError(10, 5, 1.35, 0, 4).message).toBe(
      'the budget of $10.00 cannot cover the next call (up to $1.35): $5.00 of it is spent, up to $4.00 unknown (calls that may have been billed)',
    );
  });
});
