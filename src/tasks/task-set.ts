import type { JsonSchema } from '../provider/json-schema.ts';
import type { LlmRequest } from '../provider/provider.ts';
import { SchemaError, sharedValidators } from '../provider/schema-validators.ts';
import { show } from '../validation/checks.ts';
import { compileTemplate, renderTemplate, TemplateError, type Placeholder, type Template } from './template.ts';

/** One task as a tasks file states it: what to ask, what the answer must fit, what it needs first. */
export interface TaskSpec {
  /** 1 to 64 letters, digits, `_` or `-`: it names the structured output (OpenAI's `json_schema`, Anthropic's tool). */
  readonly name: string;
  /** What the model is asked, with `{{placeholders}}`: `{{title}}`, `{{meta.author}}`, `{{tasks.NAME.field}}`. */
  readonly prompt: string;
  /** The JSON Schema the answer must fit; its root an object. */
  readonly schema: JsonSchema;
  /** The tasks whose outputs it needs: it runs once they are done. @default none */
  readonly dependsOn?: readonly string[] | undefined;
  /** The provider (by name) that answers it. @default the run's routes, else its first provider */
  readonly provider?: string | undefined;
  /** The most tokens its answer may take. @default the provider's */
  readonly maxOutputTokens?: number | undefined;
  /** What the answer is, in a line (the structured output's or the tool's description). @default none */
  readonly description?: string | undefined;
}

/** A task ready to run: its spec, its prompt compiled, and where it stands in the graph. */
export interface Task extends TaskSpec {
  /** The tasks whose answers this one needs first. */
  readonly dependsOn: readonly string[];
  /** The prompt, parsed: its text and its placeholders. */
  readonly template: Template;
  /** Its calls and those that wait on it, at most, one after another: 1 for a task nothing waits on. */
  readonly height: number;
}

/**
 * Every article's tasks, in an order that puts each after what it depends on. An article's
 * independent tasks may run at once; a task runs once its `dependsOn` are done.
 */
export interface TaskSet {
  /** The tasks, each after those it depends on. */
  readonly tasks: readonly Task[];
  /** The most calls an article makes one after another (the graph's longest path). */
  readonly depth: number;
  /** Where the tasks were read from (a path, or `the built-in tasks`): what messages about them begin with. */
  readonly source: string;
  /** The input line's fields the tasks' prompts read (dot paths), each once. */
  readonly inputFields: readonly string[];
  /** Each task waits on the one before it (a chain, as the built-in pair is): an article's calls go one at a time. */
  readonly serial: boolean;
}

/** A tasks file (or a list of task specs) that cannot run: `message` names the source, the task and what to fix. */
export class TasksError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'TasksError';
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Checks task specs and compiles them into a {@link TaskSet}: names unique and well formed, every
 * dependency known and no cycle, every `{{tasks.NAME}}` placeholder in its task's `dependsOn`, every
 * schema an object schema that ajv compiles. Throws a {@link TasksError} whose message starts
 * with `source`. Loads ajv for a schema not compiled ahead (the built-in tasks' are).
 */
export function defineTasks(specs: readonly TaskSpec[], source = 'tasks'): TaskSet {
  const fail = (message: string): never => {
    throw new TasksError(`${source}: ${message}`);
  };
  if (!Array.isArray(specs) || specs.length === 0) fail('expected at least one task');
  const byName = new Map<string, { spec: TaskSpec; index: number }>();
  specs.forEach((spec, index) => {
    if (!NAME.test(spec.name))
      fail(`task name ${show(spec.name)}: expected 1 to 64 letters, digits, _ or - (it names the structured output)`);
    const earlier = byName.get(spec.name);
    if (earlier !== undefined)
      fail(`task "${spec.name}" is defined twice (tasks[${earlier.index}] and tasks[${index}]): give each task a name of its own`);
    byName.set(spec.name, { spec, index });
  });
  const names = [...byName.keys()];
  for (const spec of specs) {
    for (const dependency of spec.dependsOn ?? []) {
      if (dependency === spec.name) fail(`task "${spec.name}" depends on itself: remove it from its dependsOn`);
      if (!byName.has(dependency))
        fail(`task "${spec.name}" depends on "${dependency}", which no task is (the tasks: ${names.join(', ')})`);
    }
  }
  const order = topologicalOrder(specs, fail);
  const validators = sharedValidators();
  const compiled = new Map<string, Task>();
  // Heights from the sinks up: a task's is one more than the highest of those that wait on it.
  const heights = new Map<string, number>();
  for (const spec of [...order].reverse()) {
    const waiting = order.filter((other) => (other.dependsOn ?? []).includes(spec.name));
    heights.set(spec.name, 1 + Math.max(0, ...waiting.map((other) => heights.get(other.name)!)));
  }
  for (const spec of order) {
    const task = `task "${spec.name}"`;
    let template: Template;
    try {
      template = compileTemplate(spec.prompt);
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      return fail(`${task}: its prompt's ${error.message}`);
    }
    for (const placeholder of template.placeholders) checkPlaceholder(placeholder, spec, byName, fail);
    if (spec.schema.type !== 'object')
      fail(`${task}: its schema's root must be {"type": "object", …} (structured output answers objects only)`);
    try {
      validators.validator(spec.schema);
    } catch (error) {
      if (!(error instanceof SchemaError)) throw error;
      fail(`${task}: its schema is not a valid JSON Schema (${error.message.replace(/^the schema is invalid: /, '')})`);
    }
    compiled.set(spec.name, { ...spec, dependsOn: spec.dependsOn ?? [], template, height: heights.get(spec.name)! });
  }
  const tasks = order.map((spec) => compiled.get(spec.name)!);
  const inputFields = new Set(
    tasks.flatMap((task) =>
      task.template.placeholders.filter((placeholder) => placeholder.from === 'input').map((placeholder) => placeholder.text),
    ),
  );
  const serial = tasks.every((task, index) => index === 0 || task.dependsOn.includes(tasks[index - 1]!.name));
  return { tasks, depth: Math.max(...tasks.map((task) => task.height)), source, inputFields: [...inputFields], serial };
}

function checkPlaceholder(
  placeholder: Placeholder,
  spec: TaskSpec,
  byName: ReadonlyMap<string, unknown>,
  fail: (message: string) => never,
): void {
  if (placeholder.from !== 'task') return;
  const named = placeholder.task!;
  if (!byName.has(named)) fail(`task "${spec.name}": {{${placeholder.text}}} names task "${named}", which no task is`);
  if (!(spec.dependsOn ?? []).includes(named)) {
    fail(`task "${spec.name}": {{${placeholder.text}}} reads task "${named}", which is not in its dependsOn: add "${named}" there`);
  }
}

/** The specs, each after every task it depends on (Kahn's algorithm, file order kept among equals); a cycle fails, naming it. */
function topologicalOrder(specs: readonly TaskSpec[], fail: (message: string) => never): TaskSpec[] {
  const done = new Set<string>();
  const order: TaskSpec[] = [];
  while (order.length < specs.length) {
    const next = specs.find((spec) => !done.has(spec.name) && (spec.dependsOn ?? []).every((dependency) => done.has(dependency)));
    if (next === undefined) {
      const cycle = findCycle(specs.filter((spec) => !done.has(spec.name)));
      return fail(`tasks ${cycle.map((name) => `"${name}"`).join(' → ')} depend on each other in a cycle: remove one of those dependsOn`);
    }
    done.add(next.name);
    order.push(next);
  }
  return order;
}

/** A cycle among `left` (every one of which waits on another of them), as names, its first repeated at the end. */
function findCycle(left: readonly TaskSpec[]): string[] {
  const byName = new Map(left.map((spec) => [spec.name, spec]));
  const path: string[] = [];
  let at = left[0]!;
  while (!path.includes(at.name)) {
    path.push(at.name);
    at = byName.get((at.dependsOn ?? []).find((dependency) => byName.has(dependency))!)!;
  }
  return [...path.slice(path.indexOf(at.name)), at.name];
}

/**
 * The request for `task` on one article: its prompt rendered from the article's fields and the
 * outputs of the tasks done. Throws `MissingFieldError` for a field the article lacks.
 */
export function requestFor(
  task: Task,
  articleId: string,
  fields: Readonly<Record<string, unknown>>,
  outputs: Readonly<Record<string, unknown>>,
): LlmRequest {
  return {
    task: task.name,
    articleId,
    prompt: renderTemplate(task.template, fields, outputs, task.name),
    // The text before the first placeholder is the same for every article: what a prompt cache keeps.
    ...(task.template.literals[0] !== '' && { promptHeadLength: task.template.literals[0]!.length }),
    schema: task.schema,
    description: task.description,
  };
}
