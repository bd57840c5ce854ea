import { readFile } from 'node:fs/promises';
import { loadOptional } from '../optional-package.ts';
import { isRecord } from '../provider/json-schema.ts';
import { show } from '../validation/checks.ts';
import { fileErrorDetail } from '../validation/file-error.ts';
import builtin from './builtin-tasks.json' with { type: 'json' };
import { defineTasks, TasksError, type TaskSet, type TaskSpec } from './task-set.ts';

/**
 * A tasks file (`--tasks tasks.json`): every article's tasks, as data.
 *
 * ```json
 * { "tasks": [
 *     { "name": "entities", "prompt": "List the people and places in: {{content}}",
 *       "schema": { "type": "object", … }, "maxOutputTokens": 200 },
 *     { "name": "headline", "dependsOn": ["entities"], "provider": "anthropic",
 *       "prompt": "Write a headline naming {{tasks.entities.people}} for: {{content}}",
 *       "schema": { "type": "object", … } } ] }
 * ```
 */

const FIELDS = ['name', 'prompt', 'schema', 'dependsOn', 'provider', 'maxOutputTokens', 'description'] as const;

/** The tasks file shipped with the package: summarize, then sentiment — the default of every run. */
export const BUILTIN_TASKS_SOURCE = 'the built-in tasks';

/**
 * Reads and checks a tasks file — JSON, or YAML for a `.yaml`/`.yml` path (the same fields; needs
 * the `yaml` package) — and rejects with a {@link TasksError} naming the file, the task and what to
 * fix; in a YAML file, also the line the task starts on (`tasks.yaml:12: task "headline": …`).
 */
export async function loadTasksFile(path: string): Promise<TaskSet> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new TasksError(`${path}: cannot read file (${fileErrorDetail(error)})`, { cause: error });
  }
  if (/\.ya?ml$/i.test(path)) return loadYamlTasks(text, path);
  let json: unknown;
  try {
    // A byte-order mark is how some editors start a UTF-8 file; JSON.parse would call it a token.
    json = JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text);
  } catch (error) {
    throw new TasksError(`${path}: invalid JSON (${(error as Error).message})`);
  }
  return parseTasksFile(json, path);
}

/** Checks a parsed tasks file; `source` begins every message (usually the path). Throws a {@link TasksError}. */
export function parseTasksFile(json: unknown, source = 'tasks'): TaskSet {
  return defineTasks(readSpecs(json, source), source);
}

/**
 * A YAML tasks file, read as its JSON twin is. A YAML error names its line; a task's error names
 * the line its entry starts on, found from the task named at the head of the message.
 */
async function loadYamlTasks(text: string, path: string): Promise<TaskSet> {
  const { LineCounter, parseDocument } = await loadOptional('yaml', 'a YAML tasks file', () => import('yaml'));
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const [syntax] = document.errors;
  if (syntax !== undefined) {
    throw new TasksError(`${path}:${lines.linePos(syntax.pos[0]).line}: invalid YAML (${syntax.message})`);
  }
  const json: unknown = document.toJS();
  try {
    return parseTasksFile(json, path);
  } catch (error) {
    if (!(error instanceof TasksError) || !error.message.startsWith(`${path}: `)) throw error;
    const rest = error.message.slice(path.length + 2);
    const index = taskIndex(rest, isRecord(json) && Array.isArray(json.tasks) ? json.tasks : []);
    const node = index === undefined ? undefined : document.getIn(['tasks', index], true);
    const offset = isNode(node) ? node.range?.[0] : undefined;
    if (offset === undefined) throw error;
    throw new TasksError(`${path}:${lines.linePos(offset).line}: ${rest}`);
  }
}

/** Which entry of `tasks` a message is about: it begins `tasks[N]`, `task "NAME"` or `task name VALUE`. */
function taskIndex(message: string, tasks: readonly unknown[]): number | undefined {
  const byIndex = /^tasks\[(\d+)\]/.exec(message);
  if (byIndex !== null) return Number(byIndex[1]);
  const byName = /^task (?:name )?(.+?)(?::| is | depends )/.exec(message);
  if (byName === null) return undefined;
  const index = tasks.findIndex((task) => isRecord(task) && (JSON.stringify(task.name) === byName[1] || show(task.name) === byName[1]));
  return index === -1 ? undefined : index;
}

function isNode(value: unknown): value is { readonly range?: readonly number[] | null } {
  return typeof value === 'object' && value !== null && 'range' in value;
}

let builtinTasks: TaskSet | undefined;

/** The built-in tasks (the shipped `builtin-tasks.json`), read through the same code as any tasks file. */
export function loadBuiltinTasks(): TaskSet {
  builtinTasks ??= parseTasksFile(builtin, BUILTIN_TASKS_SOURCE);
  return builtinTasks;
}

function readSpecs(json: unknown, source: string): TaskSpec[] {
  const fail = (where: string, message: string): never => {
    throw new TasksError(`${source}: ${where}${message}`);
  };
  if (!isRecord(json)) return fail('', `expected an object with "tasks", got ${show(json)}`);
  for (const key of Object.keys(json)) if (key !== 'tasks') fail(`${key}: `, 'unknown field (expected tasks)');
  if (!Array.isArray(json.tasks)) return fail('tasks: ', `expected an array of tasks, got ${show(json.tasks)}`);
  return json.tasks.map((entry: unknown, index: number) => {
    const at = `tasks[${index}]`;
    if (!isRecord(entry)) return fail(`${at}: `, `expected a task object, got ${show(entry)}`);
    const named = typeof entry.name === 'string' ? `task "${entry.name}"` : at;
    for (const key of Object.keys(entry)) {
      if (!(FIELDS as readonly string[]).includes(key)) fail(`${named}: ${key}: `, `unknown field (expected one of ${FIELDS.join(', ')})`);
    }
    if (typeof entry.name !== 'string')
      fail(`${at}.name: `, `expected the task's name, got ${entry.name === undefined ? 'nothing' : show(entry.name)}`);
    if (typeof entry.prompt !== 'string' || entry.prompt.trim() === '')
      fail(`${named}: prompt: `, `expected the prompt's text, got ${show(entry.prompt)}`);
    if (!isRecord(entry.schema)) fail(`${named}: schema: `, `expected a JSON Schema object, got ${show(entry.schema)}`);
    const { dependsOn, provider, maxOutputTokens, description } = entry;
    if (dependsOn !== undefined && !(Array.isArray(dependsOn) && dependsOn.every((name) => typeof name === 'string'))) {
      fail(`${named}: dependsOn: `, `expected a list of task names, got ${show(dependsOn)}`);
    }
    if (provider !== undefined && (typeof provider !== 'string' || provider === ''))
      fail(`${named}: provider: `, `expected a provider's name, got ${show(provider)}`);
    if (maxOutputTokens !== undefined && !(Number.isSafeInteger(maxOutputTokens) && (maxOutputTokens as number) >= 1)) {
      fail(`${named}: maxOutputTokens: `, `expected a whole number >= 1, got ${show(maxOutputTokens)}`);
    }
    if (description !== undefined && typeof description !== 'string')
      fail(`${named}: description: `, `expected a line of text, got ${show(description)}`);
    return {
      name: entry.name as string,
      prompt: entry.prompt as string,
      schema: entry.schema as TaskSpec['schema'],
      dependsOn: dependsOn as string[] | undefined,
      provider: provider as string | undefined,
      maxOutputTokens: maxOutputTokens as number | undefined,
      description: description as string | undefined,
    };
  });
}
