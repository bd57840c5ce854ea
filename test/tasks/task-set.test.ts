import { describe, expect, it } from 'vitest';
import { defineTasks, requestFor, TasksError, type TaskSpec } from '../../src/tasks/task-set.ts';
import { loadBuiltinTasks, parseTasksFile } from '../../src/tasks/tasks-file.ts';
import { compileTemplate, MissingFieldError, missingInput, renderTemplate } from '../../src/tasks/template.ts';

const OBJECT = { type: 'object', properties: { x: { type: 'string' } }, required: ['x'], additionalProperties: false } as const;
const task = (name: string, extra: Partial<TaskSpec> = {}): TaskSpec => ({
  name,
  prompt: `Do ${name}: {{content}}`,
  schema: OBJECT,
  ...extra,
});

describe('compileTemplate() and renderTemplate()', () => {
  it('fills input fields, nested ones and tasks’ outputs; strings as they are, everything else as JSON', () => {
    const template = compileTemplate(
      '{{title}} by {{ meta.author }} — {{tasks.entities.people}}; {{tasks.entities}}; {{n}} {{ok}} {{none}}',
    );
    const fields = { title: 'Rain', meta: { author: 'A. Writer' }, n: 3, ok: true, none: null };
    const outputs = { entities: { people: ['Ada', 'Bo'] } };
    expect(renderTemplate(template, fields, outputs, 'headline')).toBe(
      'Rain by A. Writer — ["Ada","Bo"]; {"people":["Ada","Bo"]}; 3 true null',
    );
  });

  it('indexes arrays by position, and leaves text without placeholders alone', () => {
    expect(renderTemplate(compileTemplate('first: {{items.0}}'), { items: ['a', 'b'] }, {}, 't')).toBe('first: a');
    expect(renderTemplate(compileTemplate('plain { text } with } braces'), {}, {}, 't')).toBe('plain { text } with } braces');
  });

  it('says which field a line lacks, for which task', () => {
    const template = compileTemplate('{{title}} {{meta.author}}');
    expect(() => renderTemplate(template, { title: 'x', meta: {} }, {}, 'headline')).toThrow(
      new MissingFieldError('meta.author', 'headline'),
    );
    expect(new MissingFieldError('meta.author', 'headline').message).toBe('missing field "meta.author" for task headline');
    expect(missingInput(template.placeholders, { title: 'x' })?.text).toBe('meta.author');
    expect(missingInput(template.placeholders, { title: 'x', meta: { author: 'y' } })).toBeUndefined();
  });

  it.each([
    ['an unclosed placeholder', 'Hello {{title', /opens a placeholder that is never closed/],
    ['an empty one', 'Hello {{ }}', /\{\{ \}\} is not a placeholder/],
    ['a path with an empty step', 'Hello {{meta..author}}', /is not a placeholder/],
    ['tasks alone', 'Hello {{tasks}}', /names no task/],
  ])('refuses %s', (_, text, message) => {
    expect(() => compileTemplate(text)).toThrow(message);
  });
});

describe('defineTasks()', () => {
  it('orders the tasks after what they depend on, and measures each one’s height in the graph', () => {
    const set = defineTasks([
      task('headline', { dependsOn: ['entities', 'summary'], prompt: 'For {{tasks.entities.x}}: {{content}}' }),
      task('entities'),
      task('summary'),
      task('translation', { dependsOn: ['headline'] }),
    ]);
    expect(set.tasks.map((t) => t.name)).toEqual(['entities', 'summary', 'headline', 'translation']);
    expect(Object.fromEntries(set.tasks.map((t) => [t.name, t.height]))).toEqual({ entities: 3, summary: 3, headline: 2, translation: 1 });
    expect(set.depth).toBe(3);
    expect(set.inputFields).toEqual(['content']);
  });

  it('makes each article’s request: the prompt filled, its head (the text before the first placeholder) measured, the schema and description as the task states them', () => {
    const set = defineTasks([task('entities', { description: 'who and where' })]);
    expect(requestFor(set.tasks[0]!, '7', { content: 'Text.' }, {})).toEqual({
      task: 'entities',
      articleId: '7',
      prompt: 'Do entities: Text.',
      promptHeadLength: 'Do entities: '.length,
      schema: OBJECT,
      description: 'who and where',
    });
  });

  it('gives a prompt that opens with a placeholder no head', () => {
    const set = defineTasks([task('entities', { prompt: '{{content}} is the text.' })]);
    expect(requestFor(set.tasks[0]!, '7', { content: 'Text.' }, {}).promptHeadLength).toBeUndefined();
  });

  it.each([
    ['no task', [], 'f.json: expected at least one task'],
    [
      'a duplicate name',
      [task('a'), task('a')],
      'f.json: task "a" is defined twice (tasks[0] and tasks[1]): give each task a name of its own',
    ],
    ['a name no structured output takes', [task('my task')], 'f.json: task name "my task": expected 1 to 64 letters, digits, _ or -'],
    ['an unknown dependency', [task('a', { dependsOn: ['b'] })], 'f.json: task "a" depends on "b", which no task is (the tasks: a)'],
    ['a task depending on itself', [task('a', { dependsOn: ['a'] })], 'f.json: task "a" depends on itself: remove it from its dependsOn'],
    [
      'a cycle',
      [task('a', { dependsOn: ['c'] }), task('b', { dependsOn: ['a'] }), task('c', { dependsOn: ['b'] }), task('d')],
      'f.json: tasks "a" → "c" → "b" → "a" depend on each other in a cycle: remove one of those dependsOn',
    ],
    [
      'a placeholder reading a task it does not depend on',
      [task('a'), task('b', { prompt: 'Use {{tasks.a.x}}' })],
      'f.json: task "b": {{tasks.a.x}} reads task "a", which is not in its dependsOn: add "a" there',
    ],
    [
      'a placeholder naming no task',
      [task('b', { prompt: 'Use {{tasks.zz}}' })],
      'f.json: task "b": {{tasks.zz}} names task "zz", which no task is',
    ],
    ['a prompt that does not compile', [task('b', { prompt: 'Use {{x' })], 'f.json: task "b": its prompt\'s "{{x" opens a placeholder'],
    [
      'a schema whose root is not an object',
      [task('b', { schema: { type: 'array' } })],
      'f.json: task "b": its schema\'s root must be {"type": "object", …}',
    ],
    [
      'an invalid JSON Schema',
      [task('b', { schema: { type: 'object', properties: { x: { type: 'strnig' } } } })],
      'f.json: task "b": its schema is not a valid JSON Schema',
    ],
  ] as const)('refuses %s with a TasksError naming the source, the task and the fix', (_, specs, message) => {
    expect(() => defineTasks(specs as readonly TaskSpec[], 'f.json')).toThrow(TasksError);
    expect(() => defineTasks(specs as readonly TaskSpec[], 'f.json')).toThrow(message);
  });
});

describe('parseTasksFile()', () => {
  it.each([
    ['not an object', [], 'f.json: expected an object with "tasks", got []'],
    ['an unknown top-level field', { tasks: [task('a')], task: [] }, 'f.json: task: unknown field (expected tasks)'],
    ['tasks not a list', { tasks: {} }, 'f.json: tasks: expected an array of tasks, got {}'],
    ['a task without a name', { tasks: [{ prompt: 'x', schema: OBJECT }] }, "f.json: tasks[0].name: expected the task's name, got nothing"],
    [
      'a misspelt field',
      { tasks: [{ ...task('a'), dependOn: [] }] },
      'f.json: task "a": dependOn: unknown field (expected one of name, prompt, schema',
    ],
    ['an empty prompt', { tasks: [{ ...task('a'), prompt: ' ' }] }, 'f.json: task "a": prompt: expected the prompt\'s text, got " "'],
    [
      'a schema that is not an object',
      { tasks: [{ ...task('a'), schema: 'object' }] },
      'f.json: task "a": schema: expected a JSON Schema object, got "object"',
    ],
    [
      'dependsOn not names',
      { tasks: [{ ...task('a'), dependsOn: 'b' }] },
      'f.json: task "a": dependsOn: expected a list of task names, got "b"',
    ],
    [
      'a bad maxOutputTokens',
      { tasks: [{ ...task('a'), maxOutputTokens: 0 }] },
      'f.json: task "a": maxOutputTokens: expected a whole number >= 1, got 0',
    ],
    ['a bad provider', { tasks: [{ ...task('a'), provider: 3 }] }, 'f.json: task "a": provider: expected a provider\'s name, got 3'],
  ])('refuses %s, naming the field', (_, json, message) => {
    expect(() => parseTasksFile(json, 'f.json')).toThrow(message);
  });
});

describe('loadBuiltinTasks()', () => {
  it('is the shipped file, read by the same code: summarize, then sentiment, on the title and the content', () => {
    const set = loadBuiltinTasks();
    expect(set.source).toBe('the built-in tasks');
    expect(set.tasks.map((t) => [t.name, t.dependsOn])).toEqual([
      ['summarize', []],
      ['sentiment', ['summarize']],
    ]);
    expect([...set.inputFields].sort()).toEqual(['content', 'title']);
    expect(loadBuiltinTasks()).toBe(set);
  });

  it('has strict schemas, as OpenAI’s strict structured output takes them: every property required, no others', () => {
    for (const { schema } of loadBuiltinTasks().tasks) {
      const { properties, required, additionalProperties } = schema as {
        properties: object;
        required: string[];
        additionalProperties: boolean;
      };
      expect(additionalProperties).toBe(false);
      expect([...required].sort()).toEqual(Object.keys(properties).sort());
    }
  });
});
