import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTasksFile } from '../../src/tasks/tasks-file.ts';

describe('loadTasksFile() - YAML', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasks-yaml-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const write = async (name: string, text: string): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  };
  const failure = (path: string): Promise<string> =>
    loadTasksFile(path).then(
      () => 'loaded',
      (error: Error) => error.message,
    );

  it('reads fixtures/tasks.yaml as its JSON twin would be read', async () => {
    const tasks = await loadTasksFile('fixtures/tasks.yaml');
    expect(tasks.tasks.map((task) => [task.name, task.dependsOn])).toEqual([
      ['summary', []],
      ['credit', ['summary']],
    ]);
    expect(tasks.inputFields).toEqual(['title', 'content', 'author']);
    expect(tasks.source).toBe('fixtures/tasks.yaml');
  });

  it('names the line of a YAML error', async () => {
    const path = await write('syntax.yml', 'tasks:\n  - name: a\n    name: b\n');
    expect(await failure(path)).toBe(`${path}:3: invalid YAML (Map keys must be unique)`);
  });

  it("maps a task's error back to the line its entry starts on", async () => {
    const schema = '    schema: { type: object, properties: { x: { type: string } } }\n';
    const path = await write(
      'tasks.yaml',
      `# two tasks\ntasks:\n  - name: first\n    prompt: "{{content}}"\n${schema}\n  - name: second\n    prompt: "{{tasks.first}} {{content}}"\n${schema}`,
    );
    expect(await failure(path)).toBe(
      `${path}:7: task "second": {{tasks.first}} reads task "first", which is not in its dependsOn: add "first" there`,
    );
    const unnamed = await write('unnamed.yaml', `tasks:\n  - name: first\n    prompt: x\n${schema}  - prompt: y\n${schema}`);
    expect(await failure(unnamed)).toBe(`${unnamed}:5: tasks[1].name: expected the task's name, got nothing`);
    const badName = await write(
      'bad-name.yaml',
      `tasks:\n  - name: first\n    prompt: x\n${schema}  - name: two words\n    prompt: y\n${schema}`,
    );
    expect(await failure(badName)).toMatch(
      new RegExp(`^${badName.replace(/[.\\/]/g, '\\$&')}:5: task name "two words": expected 1 to 64 letters`),
    );
  });
});
