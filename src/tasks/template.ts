/**
 * A task's prompt with `{{placeholders}}`: a field of the input line (`{{title}}`, nested
 * `{{meta.author}}`), or the output of a task it depends on (`{{tasks.NAME}}` whole, as JSON, or
 * `{{tasks.NAME.field}}`). Strings render as they are; numbers, booleans, null, arrays and objects
 * as JSON. Compiled once, rendered per article.
 */

/** One `{{…}}` of a template: where its value comes from. */
export interface Placeholder {
  /** As written between the braces, trimmed: `meta.author`, `tasks.entities.people`. */
  readonly text: string;
  /** `input`: a field of the article's input line; `task`: an output of another task. */
  readonly from: 'input' | 'task';
  /** With `task`, the task whose output it reads. */
  readonly task?: string | undefined;
  /** The path into the input line, or into the task's output (empty: the whole output). */
  readonly path: readonly string[];
}

/** A template as literal text and placeholders, alternating: `parts[0]`, then a placeholder, then `parts[1]`, … */
export interface Template {
  /** The text between the placeholders: one more than there are placeholders. */
  readonly literals: readonly string[];
  /** The placeholders, in order. */
  readonly placeholders: readonly Placeholder[];
}

/** A template that cannot be compiled: `message` says what and where, in the words a tasks file's reader shows. */
export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

/** A placeholder's value the article lacks: a field the input line does not have, or (never after dependsOn) an output. */
export class MissingFieldError extends Error {
  /** The class's name, which messages, logs and results show. */
  override readonly name = 'MissingFieldError';

  constructor(
    /** As written in the template: `meta.author`. */
    readonly field: string,
    /** The task whose prompt needs it. */
    readonly task: string,
  ) {
    super(`missing field "${field}" for task ${task}`);
  }
}

const SEGMENT = /^[^\s.{}]+$/;

/** Compiles a prompt; throws {@link TemplateError} for a `{{` never closed or a placeholder that names nothing. */
export function compileTemplate(text: string): Template {
  const literals: string[] = [];
  const placeholders: Placeholder[] = [];
  let at = 0;
  for (;;) {
    const open = text.indexOf('{{', at);
    if (open === -1) break;
    const close = text.indexOf('}}', open + 2);
    if (close === -1) throw new TemplateError(`"${clip(text.slice(open))}" opens a placeholder that is never closed with }}`);
    literals.push(text.slice(at, open));
    placeholders.push(placeholderOf(text.slice(open + 2, close).trim(), text.slice(open, close + 2)));
    at = close + 2;
  }
  literals.push(text.slice(at));
  return { literals, placeholders };
}

function placeholderOf(inner: string, written: string): Placeholder {
  const path = inner.split('.');
  if (inner === '' || !path.every((segment) => SEGMENT.test(segment))) {
    throw new TemplateError(`${written} is not a placeholder (write {{title}}, {{meta.author}}, {{tasks.NAME}} or {{tasks.NAME.field}})`);
  }
  if (path[0] === 'tasks') {
    if (path.length === 1) throw new TemplateError(`${written} names no task (write {{tasks.NAME}} or {{tasks.NAME.field}})`);
    return { text: inner, from: 'task', task: path[1], path: path.slice(2) };
  }
  return { text: inner, from: 'input', path };
}

/**
 * The prompt for one article: `fields` is its input line, `outputs` the outputs of the tasks done.
 * Throws {@link MissingFieldError} (naming `task`) for a value that is not there.
 */
export function renderTemplate(
  template: Template,
  fields: Readonly<Record<string, unknown>>,
  outputs: Readonly<Record<string, unknown>>,
  task: string,
): string {
  let text = template.literals[0]!;
  for (let i = 0; i < template.placeholders.length; i++) {
    const placeholder = template.placeholders[i]!;
    const root = placeholder.from === 'input' ? fields : outputs[placeholder.task!];
    const value =
      placeholder.from === 'input' ? valueAt(fields, placeholder.path) : root === undefined ? undefined : valueAt(root, placeholder.path);
    if (value === undefined) throw new MissingFieldError(placeholder.text, task);
    text += (typeof value === 'string' ? value : JSON.stringify(value)) + template.literals[i + 1]!;
  }
  return text;
}

/** The first of `placeholders`' input fields that `fields` lacks, or undefined. */
export function missingInput(placeholders: readonly Placeholder[], fields: Readonly<Record<string, unknown>>): Placeholder | undefined {
  for (const placeholder of placeholders)
    if (placeholder.from === 'input' && valueAt(fields, placeholder.path) === undefined) return placeholder;
  return undefined;
}

/** The value at `path` (object keys, array indexes), or undefined when any step is missing. */
function valueAt(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
