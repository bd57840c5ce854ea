// `news-processor/plan`: a run worked out before it starts — which provider or pool serves each
// task, the tasks' fingerprints, the schemas a provider would refuse, the least a call can hold of a
// budget (`planRun`: what `runPipeline` and `runBatch` take as `plan`, worked out once) — and what
// the run would call, take and cost, and the least time its limits allow, with no call made
// (`estimateRun`: `--dry-run`), counting prompt tokens with the tokenizer token limits count with
// (`loadTokenizer`: loaded up front, a missing `gpt-tokenizer` is said before a run starts).
// Importing it has no side effects.
export { planRun } from './pipeline/run-plan.ts';
export type { RunPlan, RunPlanOptions, BudgetProblem, BatchServer } from './pipeline/run-plan.ts';
export { estimateRun } from './pipeline/run-estimate.ts';
export type { RunEstimate, TaskEstimate, ProviderEstimate, LimitEstimate } from './pipeline/run-estimate.ts';
export { loadTokenizer } from './provider/token-estimate.ts';
// A provider's and a pool's setup checked before a run (a run checks them too, and throws on the first problem).
export { providerSetupProblem } from './gate/provider-options.ts';
export type { ProviderSetupProblem, ProviderSetupRule } from './gate/provider-options.ts';
export type { PoolSetupProblem } from './route/pool-setup.ts';
