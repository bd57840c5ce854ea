import { describe, expect, it } from 'vitest';
import { changedTasks, taskFingerprint, type TaskServer } from '../../src/tasks/task-fingerprint.ts';
import { defineTasks, type TaskSpec } from '../../src/tasks/task-set.ts';
import { planRun } from '../../src/pipeline/run-plan.ts';
import { requestLimit } from '../../src/quota/provider-limits.ts';
import { SimulatedProvider } from '../../src/simulator/simulated.ts';

const SCHEMA = {
  type: 'object',
  properties: { label: { type: 'string', enum: ['a', 'b'] }, score: { type: 'number' } },
  required: ['label', 'score'],
  additionalProperties: false,
} as const;
const SPEC: TaskSpec = { name: 'label', prompt: 'Label {{title}}', schema: SCHEMA, description: 'A label.' };
const SERVERS: readonly TaskServer[] = [{ provider: 'key-a', vendor: 'openai', model: 'gpt-4.1-mini', maxOutputTokens: 256 }];

describe('taskFingerprint()', () => {
  it('is 8 hex digits, the same in every run and process (a fixed value)', () => {
    const fingerprint = taskFingerprint(SPEC, SERVERS);
    expect(fingerprint).toMatch(/^[0-9a-f]{8}$/);
    // The SHA-256 of the spec as JSON with sorted keys (Python's json.dumps(sort_keys=True) gives the same), cut to 8 digits:
    // a change to how it is computed would make every earlier results file's outputs look stale.
    expect(fingerprint).toBe('4360d7f0');
  });

  it('does not change with the key order of the spec, its schema or a server', () => {
    const reordered: TaskSpec = {
      description: 'A label.',
      schema: {
        additionalProperties: false,
        required: ['label', 'score'],
        properties: { score: { type: 'number' }, label: { enum: ['a', 'b'], type: 'string' } },
        type: 'object',
      },
      prompt: 'Label {{title}}',
      name: 'label',
    };
    expect(taskFingerprint(reordered, [{ maxOutputTokens: 256, model: 'gpt-4.1-mini', vendor: 'openai', provider: 'key-a' }])).toBe(
      taskFingerprint(SPEC, SERVERS),
    );
  });

  it('changes with the prompt, the schema, the description, the API, the model and the output cap', () => {
    const base = taskFingerprint(SPEC, SERVERS);
    const changed = [
      taskFingerprint({ ...SPEC, prompt: 'Label {{title}}.' }, SERVERS),
      taskFingerprint({ ...SPEC, schema: { ...SCHEMA, required: ['label'] } }, SERVERS),
      taskFingerprint(
        { ...SPEC, schema: { ...SCHEMA, properties: { ...SCHEMA.properties, label: { type: 'string', enum: ['a', 'c'] } } } },
        SERVERS,
      ),
      taskFingerprint({ ...SPEC, description: 'Another label.' }, SERVERS),
      taskFingerprint(SPEC, [{ ...SERVERS[0]!, vendor: 'azure' }]),
      taskFingerprint(SPEC, [{ ...SERVERS[0]!, model: 'gpt-4.1' }]),
      taskFingerprint(SPEC, [{ ...SERVERS[0]!, maxOutputTokens: 512 }]),
      taskFingerprint(SPEC, [...SERVERS, { provider: 'claude', vendor: 'anthropic', model: 'claude-haiku', maxOutputTokens: 256 }]),
      // A provider that names no model is known by its name.
      taskFingerprint(SPEC, [{ provider: 'local', maxOutputTokens: 256 }]),
      taskFingerprint(SPEC, [{ provider: 'other', maxOutputTokens: 256 }]),
    ];
    for (const other of changed) expect(other).not.toBe(base);
    expect(new Set(changed).size).toBe(changed.length);
  });

  it('takes the servers as a set: another key of the same model, a renamed provider or another order is the same', () => {
    const base = taskFingerprint(SPEC, SERVERS);
    const claude: TaskServer = { provider: 'claude', vendor: 'anthropic', model: 'claude-haiku', maxOutputTokens: 256 };
    expect(taskFingerprint(SPEC, [{ ...SERVERS[0]!, provider: 'renamed' }])).toBe(base);
    expect(taskFingerprint(SPEC, [...SERVERS, { ...SERVERS[0]!, provider: 'key-b' }])).toBe(base);
    expect(taskFingerprint(SPEC, [claude, ...SERVERS])).toBe(taskFingerprint(SPEC, [...SERVERS, claude]));
  });

  it('does not change with the task’s name, its dependsOn or its place among the tasks', () => {
    expect(taskFingerprint({ ...SPEC, name: 'other', dependsOn: ['x'] }, SERVERS)).toBe(taskFingerprint(SPEC, SERVERS));
    const other: TaskSpec = { name: 'other', prompt: 'Other {{title}}', schema: SCHEMA };
    const setup = { provider: new SimulatedProvider({ seed: 1 }), limits: requestLimit(10, 1), maxOutputTokens: 300 };
    const inOrder = defineTasks([SPEC, other]);
    const reversed = defineTasks([other, SPEC]);
    const a = planRun({ tasks: inOrder, providers: [setup] }).fingerprints;
    expect(planRun({ tasks: reversed, providers: [setup] }).fingerprints).toEqual(a);
    // The provider's output cap counts where the task sets none; the task's own where it does.
    const { vendor, model } = setup.provider.target;
    expect(a.label).toBe(taskFingerprint(SPEC, [{ provider: 'simulated', vendor, model, maxOutputTokens: 300 }]));
    const capped = planRun({ tasks: defineTasks([{ ...SPEC, maxOutputTokens: 100 }, other]), providers: [setup] }).fingerprints;
    expect(capped.label).not.toBe(a.label);
    expect(capped.other).toBe(a.other);
  });
});

describe('changedTasks()', () => {
  const tasks = defineTasks([
    { name: 'a', prompt: 'A {{title}}', schema: SCHEMA },
    { name: 'b', prompt: 'B {{tasks.a.label}}', schema: SCHEMA, dependsOn: ['a'] },
    { name: 'c', prompt: 'C {{tasks.b.label}}', schema: SCHEMA, dependsOn: ['b'] },
    { name: 'd', prompt: 'D {{title}}', schema: SCHEMA },
  ]);
  const now = { a: '00000001', b: '00000002', c: '00000003', d: '00000004' };
  const all = { a: {}, b: {}, c: {}, d: {} };

  it('names nothing when no fingerprint changed', () => {
    expect(changedTasks(tasks, now, now, all)).toEqual([]);
  });

  it('names a changed task and those that depend on it, however far down; not the others', () => {
    expect(changedTasks(tasks, now, { ...now, a: 'ffffffff' }, all)).toEqual(['a', 'b', 'c']);
    expect(changedTasks(tasks, now, { ...now, b: 'ffffffff' }, all)).toEqual(['b', 'c']);
    expect(changedTasks(tasks, now, { ...now, d: 'ffffffff' }, all)).toEqual(['d']);
  });

  it('takes a line without fingerprints as made by the tasks as they are', () => {
    expect(changedTasks(tasks, now, undefined, all)).toEqual([]);
  });

  it('names only outputs the line holds; a task it has no fingerprint of is changed', () => {
    expect(changedTasks(tasks, now, { ...now, a: 'ffffffff' }, { a: {}, d: {} })).toEqual(['a']);
    const { d: _, ...withoutD } = now;
    expect(changedTasks(tasks, now, withoutD, all)).toEqual(['d']);
  });
});
