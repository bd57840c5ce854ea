// The run worked out once, before it starts: which route serves each task, the tasks' fingerprints,
// what a provider would refuse, and the least a call can hold of a budget. The live run, a batch run,
// the dry run's estimate and the command line all read the one plan.
import { GATE_DEFAULTS } from '../gate/call-gate.ts';
import { inputTokenBound, usageNanoUsd } from '../gate/call-cost.ts';
import { providerSetupProblem, specsOf, type ProviderSetup } from '../gate/provider-options.ts';
import { NANO_USD } from '../quota/budget.ts';
import { poolSetupProblem, type PoolSetup } from '../route/pool-setup.ts';
import type { Route } from '../route/route.ts';
import { changedTasks } from '../tasks/task-fingerprint.ts';
import { TasksError, type TaskSet } from '../tasks/task-set.ts';
import { loadBuiltinTasks } from '../tasks/tasks-file.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../provider/provider.ts';
import { expected } from '../validation/checks.ts';
import { ownRoutes } from './own-routes.ts';
import { batchFingerprints, servingSetups, taskFingerprints } from './task-fingerprints.ts';

/** What {@link planRun} plans: the run's tasks, and where their calls go. */
export interface RunPlanOptions {
  /** Every article's tasks. @default the built-in summarize, then sentiment */
  readonly tasks?: TaskSet | undefined;
  /** The providers a live call may go to (none for a batch run with no live path). */
  readonly providers: readonly ProviderSetup[];
  /**
   * Which provider or pool (by name) serves each task that names none itself, or a `Route` of one's
   * own (its gates are then among those the task may go to). @default the first provider
   */
  readonly routes?: Readonly<Record<string, string | Route>> | undefined;
  /** Pools of providers a task or `routes` may name. @default none */
  readonly pools?: readonly PoolSetup[] | undefined;
  /** The run goes through a Batch API: each task's fingerprint is over it. @default none (a live run) */
  readonly batch?: BatchServer | undefined;
}

/**
 * A run worked out before it starts ({@link planRun}): made once, read by `runPipeline`,
 * `runBatch`, the dry run's estimate and the command line alike.
 */
export interface RunPlan {
  readonly tasks: TaskSet;
  /** The providers it was made of, as given. */
  readonly providers: readonly ProviderSetup[];
  /** The pools it was made of, as given (none: an empty list). */
  readonly pools: readonly PoolSetup[];
  /** Which provider or pool serves each task: task name → its name (a batch run: the Batch API's provider). */
  readonly routes: ReadonlyMap<string, string>;
  /** The providers each task's calls may go to: its provider, or its pool's members and their fallbacks'. */
  readonly servers: ReadonlyMap<string, readonly ProviderSetup[]>;
  /**
   * Each task's fingerprint (task name → 8 hex digits): its definition and who may answer it — what
   * a result records, and what a resumed run compares.
   */
  readonly fingerprints: Readonly<Record<string, string>>;
  /** The Batch API the run goes through, when it does: its provider's name and model, and the output cap every row asks for. */
  readonly batch:
    | {
        /** The provider's name, as the Batch API gives it (`BatchApi.name`). */
        readonly name: string;
        /** The model every row asks for (`BatchApi.model`). @default none (the provider's name stands for it) */
        readonly model?: string | undefined;
        /** The most tokens an answer may take, every row alike. @default DEFAULT_MAX_OUTPUT_TOKENS (256) */
        readonly maxOutputTokens?: number | undefined;
      }
    | undefined;
  /** Tasks whose schema a provider they may go to would refuse on every call, in the tasks' order, in its words. */
  readonly schemaProblems: readonly { readonly task: string; readonly provider: string; readonly problem: string }[];
  /** The providers with no price, in order: a budget cannot hold their calls. */
  readonly unpriced: readonly string[];
  /**
   * The least a call of any task can hold of a budget, in USD, and that task: its prompt's fixed
   * text, its schema and its provider's framing as input tokens, and its whole answer at its cap.
   * Undefined when a provider has no price.
   */
  readonly budgetFloor: { readonly task: string; readonly usd: number } | undefined;
  /**
   * Why a budget of `maxUsd` cannot run this plan — a provider has no price (`unpriced`: a budget
   * holds each call's worst case at its provider's price), or not one call fits (`floor`: the
   * cheapest, of `task`, holds up to `floorUsd`) — or undefined when it can hold a call.
   */
  budgetProblem(
    maxUsd: number,
  ):
    | { readonly rule: 'unpriced'; readonly providers: readonly string[] }
    | { readonly rule: 'floor'; readonly task: string; readonly floorUsd: number }
    | undefined;
  /**
   * The tasks a resumed run makes again of an earlier result, as the tasks now are: those whose
   * fingerprint changed since it was written and the tasks that depend on them, and the tasks
   * added since (neither a fingerprint nor an output in it). A result without fingerprints (written
   * before they were recorded) is taken as made by the tasks as they are. What a result store's
   * `takeUp` takes as `redo`.
   */
  readonly redo: (result: {
    readonly outputs: Readonly<Record<string, unknown>>;
    readonly fingerprints: Readonly<Record<string, string>> | undefined;
  }) => readonly string[];
}

/** Where a batch run's calls go: a vendor's Batch API, every row asking for one output cap. */
export type BatchServer = NonNullable<RunPlan['batch']>;

/** Why a budget cannot run a plan ({@link RunPlan.budgetProblem}). */
export type BudgetProblem = NonNullable<ReturnType<RunPlan['budgetProblem']>>;

/**
 * Works out a run before it starts: which provider or pool serves each task, the tasks'
 * fingerprints, the schemas a provider would refuse, and the least a call can hold of a budget.
 * Throws a {@link TasksError} (its message begins with where the tasks came from) for a route to a
 * provider or pool that is not among them, a route for a task that is not there, and a task whose
 * `maxOutputTokens` its provider's token limits cannot hold.
 */
export function planRun(options: RunPlanOptions): RunPlan {
  const tasks = options.tasks ?? loadBuiltinTasks();
  const { providers, batch } = options;
  const pools = options.pools ?? [];
  if (providers.length === 0 && batch === undefined) throw expected('providers', 'at least one provider', providers);
  const poolProblem = poolSetupProblem(
    pools,
    providers.map((setup) => setup.provider.name),
  );
  if (poolProblem !== undefined) throw expected(poolProblem.field, poolProblem.expected, poolProblem.value);
  // Routes of the caller's own: their gates stand as providers, and each route of several as a pool of them.
  const own = ownRoutes(
    options.routes,
    new Set([...providers.map((setup) => setup.provider.name), ...pools.map((pool) => pool.name)]),
    undefined,
  );
  const routes =
    providers.length === 0
      ? new Map(tasks.tasks.map((task) => [task.name, batch!.name]))
      : taskProviders(tasks, providers, options.routes, pools);
  const allSetups = [...providers, ...own.setups];
  const allPools = [...pools, ...own.pools];
  const servers = new Map(tasks.tasks.map((task) => [task.name, servingSetups(routes.get(task.name)!, allSetups, allPools)]));
  const fingerprints = batch === undefined ? taskFingerprints(tasks, servers) : batchFingerprints(tasks, batch);
  const schemaProblems: RunPlan['schemaProblems'][number][] = [];
  for (const task of tasks.tasks) {
    for (const setup of servers.get(task.name)!) {
      const problem = setup.provider.schemaProblem?.(task.schema);
      if (problem === undefined) continue;
      schemaProblems.push({ task: task.name, provider: setup.provider.name, problem });
      break;
    }
  }
  const unpriced = allSetups.filter((setup) => setup.price === undefined).map((setup) => setup.provider.name);
  const floor = unpriced.length > 0 ? undefined : cheapestCall(tasks, servers);
  const budgetFloor = floor === undefined ? undefined : { task: floor.task, usd: floor.nanoUsd / NANO_USD };
  const now = fingerprints;
  return {
    tasks,
    providers,
    pools,
    routes,
    servers,
    fingerprints,
    batch,
    schemaProblems,
    unpriced,
    budgetFloor,
    budgetProblem(maxUsd) {
      if (unpriced.length > 0) return { rule: 'unpriced', providers: unpriced };
      if (floor !== undefined && maxUsd * NANO_USD < floor.nanoUsd) return { rule: 'floor', task: floor.task, floorUsd: budgetFloor!.usd };
      return undefined;
    },
    redo: ({ outputs, fingerprints: then }) => [
      ...changedTasks(tasks, now, then, outputs),
      ...(then === undefined
        ? []
        : tasks.tasks.filter((task) => !Object.hasOwn(then, task.name) && !Object.hasOwn(outputs, task.name)).map((task) => task.name)),
    ],
  };
}

/**
 * Throws a `TypeError` unless `plan` is the plan of `run`: made of its providers (a live run) or
 * through its Batch API at its output cap (a batch run), and of its tasks when it names them.
 */
export function checkPlan(
  plan: RunPlan,
  run: { readonly providers?: readonly ProviderSetup[]; readonly tasks?: TaskSet | undefined; readonly batch?: BatchServer },
): void {
  const refuse = (wanted: string, got: string): never => {
    throw new TypeError(`Expected plan to be ${wanted}, got ${got}`);
  };
  const kind = (batch: BatchServer | undefined) => (batch === undefined ? "a live run's" : "a batch run's");
  if ((plan.batch === undefined) !== (run.batch === undefined)) refuse(`${kind(run.batch)} planRun()`, kind(plan.batch));
  if (run.providers !== undefined && plan.providers !== run.providers)
    refuse("planRun() of the run's providers", 'a plan of other providers');
  if (run.batch !== undefined) {
    const cap = (batch: BatchServer) => batch.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
    const through = (batch: BatchServer) => `${batch.name} (model ${batch.model ?? 'none'}, maxOutputTokens ${cap(batch)})`;
    const planned = plan.batch!;
    if (planned.name !== run.batch.name || planned.model !== run.batch.model || cap(planned) !== cap(run.batch)) {
      refuse(`planRun() through ${through(run.batch)}`, `a plan through ${through(planned)}`);
    }
  }
  if (run.tasks !== undefined && plan.tasks !== run.tasks) refuse("planRun() of the run's tasks", 'a plan of other tasks');
}

/** The call of any task, at any provider it may go to, that holds the least of a budget: its task and nano-dollars. */
function cheapestCall(
  tasks: TaskSet,
  servers: ReadonlyMap<string, readonly ProviderSetup[]>,
): { readonly task: string; readonly nanoUsd: number } | undefined {
  let cheapest: { task: string; nanoUsd: number } | undefined;
  for (const task of tasks.tasks) {
    for (const setup of servers.get(task.name)!) {
      const inputTokens = inputTokenBound(
        { task: task.name, articleId: '', prompt: task.template.literals.join(''), schema: task.schema, description: task.description },
        setup.provider.framing,
      );
      const outputTokens = task.maxOutputTokens ?? setup.maxOutputTokens ?? GATE_DEFAULTS.maxOutputTokens;
      const nanoUsd = usageNanoUsd({ inputTokens, outputTokens }, setup.price!);
      if (cheapest === undefined || nanoUsd < cheapest.nanoUsd) cheapest = { task: task.name, nanoUsd };
    }
  }
  return cheapest;
}

/**
 * Which provider, pool or route serves each task (by name): the one it names, else the one `routes`
 * names for it (or the route object given there), else the first provider. Throws a
 * {@link TasksError} for a name that is not among them, a route for a task that is not there, and a
 * task whose `maxOutputTokens` the token limits of a provider it may be sent to cannot hold.
 */
function taskProviders(
  tasks: TaskSet,
  providers: readonly ProviderSetup[],
  routes: Readonly<Record<string, string | Route>> | undefined,
  pools: readonly PoolSetup[],
): Map<string, string> {
  const names = providers.map((setup) => setup.provider.name);
  const poolNames = pools.map((pool) => pool.name);
  const fail = (message: string): never => {
    throw new TasksError(`${tasks.source}: ${message}`);
  };
  for (const task of Object.keys(routes ?? {})) {
    if (!tasks.tasks.some((candidate) => candidate.name === task)) {
      fail(`the routes name task "${task}", which is not one of these tasks (${tasks.tasks.map((t) => t.name).join(', ')})`);
    }
  }
  const assigned = new Map<string, string>();
  for (const task of tasks.tasks) {
    const given = task.provider ?? routes?.[task.name];
    if (typeof given === 'object') {
      for (const gate of given.gates) checkOutputFits(task, { provider: gate.provider, limits: gate.limits }, fail);
      assigned.set(task.name, given.name);
      continue;
    }
    const name = given ?? names[0]!;
    const pool = pools.find((candidate) => candidate.name === name);
    const served = pool === undefined ? [name] : pool.members;
    if (pool === undefined && !names.includes(name)) {
      const known = [...names, ...poolNames].map((n) => `"${n}"`).join(', ');
      return fail(
        `task "${task.name}" asks for ${poolNames.length > 0 ? 'provider or pool' : 'provider'} "${name}", which is not one of the run's (${known})`,
      );
    }
    for (const member of served) checkOutputFits(task, providers.find((candidate) => candidate.provider.name === member)!, fail);
    assigned.set(task.name, name);
  }
  return assigned;
}

/** Fails when the task's `maxOutputTokens` cannot fit the token limits of `setup`'s provider. */
function checkOutputFits(
  task: TaskSet['tasks'][number],
  setup: Pick<ProviderSetup, 'provider' | 'limits'>,
  fail: (message: string) => never,
): void {
  if (task.maxOutputTokens === undefined) return;
  const problem = providerSetupProblem({ limits: setup.limits, maxOutputTokens: task.maxOutputTokens });
  if (problem?.rule !== 'token-burst') return;
  const spec = specsOf(setup.limits)[Number(/\d+/.exec(problem.field)![0])]!;
  fail(
    `task "${task.name}": its maxOutputTokens (${task.maxOutputTokens}) cannot fit the ${spec.kind} limit of provider "${setup.provider.name}" ` +
      `(burst ${spec.burst}; a call takes ${spec.kind === 'output-tokens' ? 'that many' : "its prompt's tokens plus that many"} at once): ` +
      'give the task a smaller maxOutputTokens, or the provider a larger limit',
  );
}
