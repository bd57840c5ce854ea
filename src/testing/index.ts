// `news-processor/testing`: what tests of code built on news-processor need — a provider that fails
// on cue, and a driver that runs a pipeline on manual time (the clock that moves only when told,
// `ManualClock`, is `news-processor/mechanisms`').
export { ScriptedProvider, drive } from './scripted-provider.ts';
export type { Step, ScriptedProviderOptions } from './scripted-provider.ts';
