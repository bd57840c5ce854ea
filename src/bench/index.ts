// `news-processor/bench`: sweep rate/burst settings through the pipeline, and chart them (a chart
// needs the `vega` and `vega-lite` packages).

export { runSweep, pairSettings, settingLabel } from './sweep.ts';
export type { BenchSetting, BenchFigures, BenchRun, SettingResult, SweepResult, SweepOptions, SweepRunStart } from './sweep.ts';
export { benchChartSpec, renderBenchChart } from './chart.ts';
export type { BenchChartOptions, VegaLiteSpec } from './chart.ts';
