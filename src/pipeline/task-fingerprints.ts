import type { ProviderSetup } from '../gate/provider-options.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../provider/provider.ts';
import type { PoolSetup } from '../route/pool-setup.ts';
import { taskFingerprint, type TaskServer } from '../tasks/task-fingerprint.ts';
import type { TaskSet } from '../tasks/task-set.ts';

/**
 * Each task's fingerprint in a run (task name → 8 hex digits): its definition and every provider
 * its route may put its calls on — the provider, or a pool's members and fallbacks — with the API,
 * the model and the output cap each would use. `assigned` is which provider or pool serves
 * each task (`taskProviders`). What a result line records, and what `--resume` compares.
 */
export function taskFingerprints(
  tasks: TaskSet,
  assigned: ReadonlyMap<string, string>,
  providers: readonly ProviderSetup[],
  pools: readonly PoolSetup[] = [],
): Readonly<Record<string, string>> {
  const fingerprints: Record<string, string> = {};
  for (const task of tasks.tasks) {
    const servers = servingSetups(assigned.get(task.name)!, providers, pools).map(
      (setup): TaskServer => ({
        provider: setup.provider.name,
        vendor: setup.provider.target?.vendor,
        model: setup.provider.target?.model,
        maxOutputTokens: task.maxOutputTokens ?? setup.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
      }),
    );
    fingerprints[task.name] = taskFingerprint(task, servers);
  }
  return Object.freeze(fingerprints);
}

/** The providers that may answer a call routed to `name`: the provider, or a pool's members and its fallbacks', in turn. */
export function servingSetups(name: string, providers: readonly ProviderSetup[], pools: readonly PoolSetup[]): ProviderSetup[] {
  const pool = pools.find((candidate) => candidate.name === name);
  if (pool === undefined) return providers.filter((setup) => setup.provider.name === name);
  return [...pool.members, ...(pool.fallback ?? [])].flatMap((next) => servingSetups(next, providers, pools));
}
