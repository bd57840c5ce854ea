// What a run asks of every article — the tasks (--tasks, or the built-in pair), planned over the
// run's providers — and what it may spend: the budget (--max-cost), checked against the plan's
// cheapest call before anything is read.
import { LocalBudget, loadBuiltinTasks, loadTasksFile, type Budget, type TaskSet } from '../src/index.ts';
import { formatUsd } from '../src/mechanisms.ts';
import { planRun, type RunPlan, type RunPlanOptions } from '../src/plan.ts';
import type { Logger } from 'pino';
import { RedisBudget, type RedisConnection } from '../src/redis/index.ts';
import type { RedisFlags } from './redis-options.ts';
import type { RunFlags } from './run-options.ts';
import { UsageError } from './usage-error.ts';

/** The run's tasks: the --tasks file, or the built-in pair. A bad file is a `TasksError` naming it, the task and what to fix. */
export async function loadTasks(flags: Pick<RunFlags, 'tasks'>): Promise<TaskSet> {
  return flags.tasks === undefined ? loadBuiltinTasks() : await loadTasksFile(flags.tasks);
}

/**
 * The run planned: its tasks over its providers (`planRun`; a task its providers cannot serve is a
 * `TasksError`), refused when a provider would refuse a task's schema on every call — said before
 * the first, as its vendor would say it.
 */
export function checkedPlan(options: RunPlanOptions & { readonly tasks: TaskSet }): RunPlan {
  const plan = planRun(options);
  const [refused] = plan.schemaProblems;
  if (refused !== undefined)
    throw new UsageError(`${plan.tasks.source}: task "${refused.task}": ${refused.problem} (every call would be a 400)`);
  return plan;
}

/** Throws a UsageError unless every provider has a price and the cheapest call of the plan fits --max-cost. */
export function checkBudget(flags: Pick<RunFlags, 'maxCost' | 'config'>, plan: RunPlan): void {
  if (flags.maxCost === undefined) return;
  const problem = plan.budgetProblem(flags.maxCost);
  if (problem?.rule === 'unpriced') {
    const names = problem.providers.map((name) => `"${name}"`).join(', ');
    throw new UsageError(`--max-cost needs a price for every provider: ${names} has none in ${flags.config} (give it "price")`);
  }
  if (problem?.rule === 'floor') {
    throw new UsageError(
      `--max-cost ${formatUsd(flags.maxCost)} cannot cover one call: the cheapest, of task ${problem.task}, holds up to ${formatUsd(problem.floorUsd)} ` +
        '(its prompt and schema as input tokens, and its whole answer); give a larger --max-cost',
    );
  }
}

/**
 * The budget --max-cost asks for: in this process, or with --budget-key in the Redis the limits are
 * shared through. `earlierUsd` is what earlier runs of the job spent (a resumed run's results say
 * it), `earlierUnknownUsd` what their calls of unknown fate may have cost: a budget in this process
 * starts with both counted, apart, so that --max-cost is the job's; one in Redis has counted them already.
 */
export function runBudget(
  flags: Pick<RunFlags, 'maxCost'> & Pick<RedisFlags, 'budgetKey' | 'redisPrefix'>,
  redis: { readonly connection: RedisConnection; readonly logger: Logger } | undefined,
  earlierUsd = 0,
  earlierUnknownUsd = 0,
): Budget | undefined {
  if (flags.maxCost === undefined) return undefined;
  if (flags.budgetKey === undefined || redis === undefined)
    return new LocalBudget({ maxUsd: flags.maxCost, spentUsd: earlierUsd, unknownUsd: earlierUnknownUsd });
  return new RedisBudget({ ...redis, key: flags.budgetKey, maxUsd: flags.maxCost, prefix: flags.redisPrefix });
}
