// `news-processor/testing`: what tests of code built on news-processor need — a provider that fails
// on cue, a driver that runs a pipeline on manual time (the clock that moves only when told,
// `ManualClock`, is `news-processor/mechanisms`'), and the simulator's answers: what the simulated
// provider answers a request, and a value that fits any schema (src/simulator/).
export { ScriptedProvider, drive } from './scripted-provider.ts';
export type { Step, ScriptedProviderOptions } from './scripted-provider.ts';
export { fittingValue } from './fitting-value.ts';
export type { FittingValueOptions } from './fitting-value.ts';
export { simulatedAnswer } from '../simulator/simulated-answers.ts';
// How the simulated provider is told to fail: its failure profiles by name, an outage window as written (`1s..4s`).
export { PROFILE_NAMES } from '../simulator/simulated.ts';
export type { FailureProfile, ProfileName, ProviderQuota, OutageWindow } from '../simulator/simulated.ts';
export { parseOutageWindow } from '../config/providers-config.ts';
