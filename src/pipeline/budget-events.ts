import type { Clock } from '../clock.ts';
import type { Budget, BudgetHold, BudgetReserveOptions } from '../quota/budget.ts';
import type { RunEvents } from './run-events.ts';

/**
 * `budget` as the run's calls use it, each of its moves told to `events` (`budget`): a hold as it
 * is granted, its settling, and a call it could not cover. Whatever keeps the money — this
 * process, Redis — keeps it as before: the run is told, nothing is counted twice.
 */
export function budgetTelling(budget: Budget, events: RunEvents, clock: Clock): Budget {
  return {
    get maxUsd() {
      return budget.maxUsd;
    },
    get spentUsd() {
      return budget.spentUsd;
    },
    get unknownUsd() {
      return budget.unknownUsd;
    },
    get heldUsd() {
      return budget.heldUsd;
    },
    async reserve(nanoUsd: number, options?: BudgetReserveOptions): Promise<BudgetHold | undefined> {
      const hold = await budget.reserve(nanoUsd, options);
      if (hold === undefined) {
        events.emit('budget', { type: 'spent', atMs: clock.now(), neededNanoUsd: nanoUsd });
        return undefined;
      }
      events.emit('budget', { type: 'held', atMs: clock.now(), nanoUsd });
      let open = true;
      return {
        settle(spentNano: number, unknownNano = 0) {
          if (!open) return;
          open = false;
          hold.settle(spentNano, unknownNano);
          const spentNanoUsd = Math.min(nanoUsd, Math.max(0, spentNano));
          events.emit('budget', {
            type: 'settled',
            atMs: clock.now(),
            heldNanoUsd: nanoUsd,
            spentNanoUsd,
            unknownNanoUsd: Math.min(nanoUsd - spentNanoUsd, Math.max(0, unknownNano)),
          });
        },
      };
    },
  };
}
