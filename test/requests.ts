// Requests of the built-in tasks, as the pipeline makes them: for tests that call a provider or a
// gate directly.
import type { LlmRequest } from '../src/provider/provider.ts';
import builtin from '../src/tasks/builtin-tasks.json' with { type: 'json' };
import { compileTemplate, renderTemplate } from '../src/tasks/template.ts';

type BuiltinTask = 'summarize' | 'sentiment';

const specs = Object.fromEntries(builtin.tasks.map((spec) => [spec.name, spec])) as Record<BuiltinTask, (typeof builtin.tasks)[number]>;

/** The built-in `task`'s request for an article with this title and text. */
export function builtinRequest(task: BuiltinTask, articleId: string, title = 'T', text = 'Body.'): LlmRequest {
  const spec = specs[task];
  const prompt = renderTemplate(compileTemplate(spec.prompt), { title, content: text }, {}, task);
  return { task, articleId, prompt, schema: spec.schema, description: spec.description };
}
