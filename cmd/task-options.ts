// What a run asks of every article — the tasks (--tasks, or the built-in pair) — and what it may
// spend: the budget (--max-cost), checked against the cheapest call before anything is read.
import {
  GATE_DEFAULTS,
  LocalBudget,
  loadBuiltinTasks,
  loadTasksFile,
  type Budget,
  type KeepSucceededOptions,
  type PoolSetup,
  type ProviderSetup,
  type TaskSet,
} from '../src/index.ts';
import { taskProviders } from '../src/pipeline/run.ts';
import { servingSetups, taskFingerprints } from '../src/pipeline/task-fingerprints.ts';
import { changedTasks } from '../src/tasks/task-fingerprint.ts';
import { inputTokenBound, usageNanoUsd } from '../src/gate/call-cost.ts';
import { formatUsd, NANO_USD } from '../src/quota/budget.ts';
import type { Logger } from 'pino';
import { RedisBudget, type RedisConnection } from '../src/redis/index.ts';
import type { RedisFlags } from './redis-options.ts';
import type { RunFlags } from './run-options.ts';
import { UsageError } from './usage-error.ts';

/**
 * The run's tasks: the --tasks file, or the built-in pair. A bad file is a `TasksError` naming it,
 * the task and what to fix; a task its providers cannot serve too.
 */
export async function runTasks(
  flags: Pick<RunFlags, 'tasks'>,
  providers: readonly ProviderSetup[],
  routes: Readonly<Record<string, string>> | undefined,
  pools: readonly PoolSetup[] = [],
): Promise<{ tasks: TaskSet; assigned: ReadonlyMap<string, string> }> {
  const tasks = flags.tasks === undefined ? loadBuiltinTasks() : await loadTasksFile(flags.tasks);
  const assigned = taskProviders(tasks, providers, routes, pools);
  // A vendor that refuses a task's schema (a strict mode) would answer every call with a 400: said
  // before the first, in the vendor's words.
  for (const task of tasks.tasks) {
    const served = servingSetups(assigned.get(task.name)!, providers, pools);
    const problem = served.map((setup) => setup.provider.schemaProblem?.(task.schema)).find((said) => said !== undefined);
    if (problem !== undefined) throw new UsageError(`${tasks.source}: task "${task.name}": ${problem} (every call would be a 400)`);
  }
  return { tasks, assigned };
}

/**
 * The budget --max-cost asks for: in this process, or with --budget-key in the Redis the limits are
 * shared through. Refused up front when a provider has no price, or when no call of any task could
 * fit it: the least a call can hold is its prompt's fixed text, its schema and the framing as input
 * tokens, and its whole answer. `earlierUsd` is what earlier runs of the job spent (a resumed run's
 * results file says it): a budget in this process starts with it spent, so that --max-cost is the
 * job's; one in Redis has counted it already.
 */
export function runBudget(
  flags: Pick<RunFlags, 'maxCost' | 'config'> & Pick<RedisFlags, 'budgetKey' | 'redisPrefix'>,
  tasks: TaskSet,
  assigned: ReadonlyMap<string, string>,
  providers: readonly ProviderSetup[],
  pools: readonly PoolSetup[],
  redis: { readonly connection: RedisConnection; readonly logger: Logger } | undefined,
  earlierUsd = 0,
): Budget | undefined {
  if (flags.maxCost === undefined) return undefined;
  checkBudget(flags.maxCost, tasks, assigned, providers, flags.config, pools);
  if (flags.budgetKey === undefined || redis === undefined) return new LocalBudget({ maxUsd: flags.maxCost, spentUsd: earlierUsd });
  return new RedisBudget({ ...redis, key: flags.budgetKey, maxUsd: flags.maxCost, prefix: flags.redisPrefix });
}

/** Throws a UsageError unless every provider has a price and the cheapest call fits `maxUsd`. */
export function checkBudget(
  maxUsd: number,
  tasks: TaskSet,
  assigned: ReadonlyMap<string, string>,
  providers: readonly ProviderSetup[],
  config: string | undefined,
  pools: readonly PoolSetup[] = [],
): void {
  const unpriced = providers.filter((setup) => setup.price === undefined).map((setup) => `"${setup.provider.name}"`);
  if (unpriced.length > 0) {
    throw new UsageError(`--max-cost needs a price for every provider: ${unpriced.join(', ')} has none in ${config} (give it "price")`);
  }
  let cheapestNano = Infinity;
  let cheapestTask = '';
  for (const task of tasks.tasks)
    for (const setup of servingSetups(assigned.get(task.name)!, providers, pools)) {
      const inputTokens = inputTokenBound(
        {
          task: task.name,
          articleId: '',
          prompt: task.template.literals.join(''),
          schema: task.schema,
          description: task.description,
        },
        setup.provider.framing,
      );
      const outputTokens = task.maxOutputTokens ?? setup.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens;
      const nano = usageNanoUsd({ inputTokens, outputTokens }, setup.price!);
      if (nano < cheapestNano) {
        cheapestNano = nano;
        cheapestTask = task.name;
      }
    }
  if (maxUsd * NANO_USD < cheapestNano) {
    throw new UsageError(
      `--max-cost ${formatUsd(maxUsd)} cannot cover one call: the cheapest, of task ${cheapestTask}, holds up to ${formatUsd(cheapestNano / NANO_USD)} ` +
        '(its prompt and schema as input tokens, and its whole answer); give a larger --max-cost',
    );
  }
}

/**
 * What --resume runs again of an earlier line, as the run's tasks now are (`now`, their
 * fingerprints): the outputs of tasks whose fingerprint changed since the line was written, and of
 * the tasks that depend on them; and the tasks added since (neither a fingerprint nor an output in
 * the line). A line without fingerprints (written before they were recorded) is taken as made by
 * the tasks as they are.
 */
export function redoAgainst(tasks: TaskSet, now: Readonly<Record<string, string>>): NonNullable<KeepSucceededOptions['redo']> {
  return ({ outputs, fingerprints }) => [
    ...changedTasks(tasks, now, fingerprints, outputs),
    ...(fingerprints === undefined
      ? []
      : tasks.tasks
          .filter((task) => !Object.hasOwn(fingerprints, task.name) && !Object.hasOwn(outputs, task.name))
          .map((task) => task.name)),
  ];
}

/** {@link redoAgainst} the fingerprints of a live run's tasks over its providers, routes and pools. */
export function redoChanged(
  tasks: TaskSet,
  providers: readonly ProviderSetup[],
  routes: Readonly<Record<string, string>> | undefined,
  pools: readonly PoolSetup[],
): NonNullable<KeepSucceededOptions['redo']> {
  return redoAgainst(tasks, taskFingerprints(tasks, taskProviders(tasks, providers, routes, pools), providers, pools));
}
