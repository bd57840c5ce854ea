// `news-processor/testing`: what tests of code built on news-processor need — a clock that moves
// only when told, a provider that fails on cue, and a driver that runs a pipeline on manual time.
export { ManualClock } from '../clock.ts';
export { ScriptedProvider, drive } from './scripted-provider.ts';
export type { Step, ScriptedProviderOptions } from './scripted-provider.ts';
