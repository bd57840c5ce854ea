import { createHash } from 'node:crypto';
import type { TaskSet, TaskSpec } from './task-set.ts';

/** Who answers a task's calls, as far as it shapes the answer: one of the providers its route may choose. */
export interface TaskServer {
  /** The provider's name: what stands for it where it names no model. */
  readonly provider: string;
  /** The API it speaks (`openai`, `anthropic`), when it says. */
  readonly vendor?: string | undefined;
  /** The model it asks for, when it names one. */
  readonly model?: string | undefined;
  /** The most tokens an answer may take there: the task's own cap, else the provider's. */
  readonly maxOutputTokens: number;
}

/** Hex digits of a fingerprint: 32 bits, for a handful of tasks compared one by one, not looked up among millions. */
const FINGERPRINT_HEX = 8;

/**
 * A short, stable hash of what shapes a task's answers: its prompt template, its schema, its
 * description, and who may answer it — each server's API, model and output cap (its provider's
 * name where it names no model), each once, in any order: two keys of one model, or a provider
 * renamed, are the same server. The same in every run and process, whatever the key order of its
 * schema or of the file; not its name (the key it is stored under), nor its `dependsOn` (a change
 * upstream is found by the task upstream), nor where it stands among the tasks.
 */
export function taskFingerprint(task: TaskSpec, servers: readonly TaskServer[]): string {
  const answering = new Set(
    servers.map(({ provider, vendor, model, maxOutputTokens }) =>
      canonicalJson(model === undefined ? { provider, maxOutputTokens } : { vendor: vendor ?? null, model, maxOutputTokens }),
    ),
  );
  const identity = {
    prompt: task.prompt,
    schema: task.schema,
    description: task.description ?? null,
    servers: [...answering].sort().map((server) => JSON.parse(server) as unknown),
  };
  return createHash('sha256').update(canonicalJson(identity)).digest('hex').slice(0, FINGERPRINT_HEX);
}

/**
 * The tasks among `outputs` to run again: those whose fingerprint `now` differs from the one the
 * line was written with (`then`), and every task that depends on one of them, however far down —
 * its prompt read an answer that is to change. A line written before fingerprints were recorded
 * (`then` undefined) is taken as made by the tasks as they are. Tasks with no output in the line
 * are not named: they run anyway.
 */
export function changedTasks(
  tasks: TaskSet,
  now: Readonly<Record<string, string>>,
  then: Readonly<Record<string, string>> | undefined,
  outputs: Readonly<Record<string, unknown>>,
): string[] {
  if (then === undefined) return [];
  const redo = new Set<string>();
  // Each task comes after those it depends on: one pass carries a change down the graph.
  for (const task of tasks.tasks) {
    if (!Object.hasOwn(outputs, task.name)) continue;
    if (then[task.name] !== now[task.name] || task.dependsOn.some((name) => redo.has(name))) redo.add(task.name);
  }
  return [...redo];
}

/** JSON with every object's keys in sorted order: equal values give equal text, whatever order they were written in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}
