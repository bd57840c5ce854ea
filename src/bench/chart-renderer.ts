import { loadOptional } from '../optional-package.ts';

/**
 * Loads what drawing a chart needs; rejects with `MissingPackageError` when `vega` or `vega-lite`
 * is not installed. Loaded when asked, not at the top: together they take the best part of a
 * second to import, which every run of the command (and every importer of the library) would
 * otherwise pay for a chart.
 */
export function loadChartRenderer(): Promise<[typeof import('vega'), typeof import('vega-lite')]> {
  return Promise.all([
    loadOptional('vega', 'a bench chart', () => import('vega')),
    loadOptional('vega-lite', 'a bench chart', () => import('vega-lite')),
  ]);
}
