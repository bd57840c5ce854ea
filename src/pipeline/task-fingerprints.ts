import type { ProviderSetup } from '../gate/provider-options.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../provider/provider.ts';
import type { PoolSetup } from '../route/pool-setup.ts';
import { taskFingerprint, type TaskServer } from '../tasks/task-fingerprint.ts';
import type { TaskSet } from '../tasks/task-set.ts';

/**
 * Each task's fingerprint in a live run (task name → 8 hex digits): its definition and every
 * provider its route may put its calls on (`servers`: the provider, or a pool's members and
 * fallbacks), with the API, the model and the output cap each would use.
 */
export function taskFingerprints(tasks: TaskSet, servers: ReadonlyMap<string, readonly ProviderSetup[]>): Readonly<Record<string, string>> {
  const fingerprints: Record<string, string> = {};
  for (const task of tasks.tasks) {
    const answering = servers.get(task.name)!.map(
      (setup): TaskServer => ({
        provider: setup.provider.name,
        vendor: setup.provider.target?.vendor,
        model: setup.provider.target?.model,
        maxOutputTokens: task.maxOutputTokens ?? setup.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
      }),
    );
    fingerprints[task.name] = taskFingerprint(task, answering);
  }
  return Object.freeze(fingerprints);
}

/**
 * Each task's fingerprint in a batch run: its definition, the Batch API's provider and model, and
 * the output cap every row asks for.
 */
export function batchFingerprints(
  tasks: TaskSet,
  server: { readonly name: string; readonly model?: string | undefined; readonly maxOutputTokens?: number | undefined },
): Readonly<Record<string, string>> {
  const answering = { provider: server.name, model: server.model, maxOutputTokens: server.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS };
  return Object.freeze(Object.fromEntries(tasks.tasks.map((task) => [task.name, taskFingerprint(task, [answering])])));
}

/** The providers that may answer a call routed to `name`: the provider, or a pool's members and its fallbacks', in turn. */
export function servingSetups(name: string, providers: readonly ProviderSetup[], pools: readonly PoolSetup[]): ProviderSetup[] {
  const pool = pools.find((candidate) => candidate.name === name);
  if (pool === undefined) return providers.filter((setup) => setup.provider.name === name);
  return [...pool.members, ...(pool.fallback ?? [])].flatMap((next) => servingSetups(next, providers, pools));
}
