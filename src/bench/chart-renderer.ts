import { loadOptional } from '../optional-package.ts';

/**
 * Loads what drawing a chart needs (`feature` names it in the error: `a bench chart`, `--report`); rejects with `MissingPackageError` when `vega` or `vega-lite`
 * is not installed. Loaded when asked, not at the top: together they take the best part of a
 * second to import, which every run of the command (and every importer of the library) would
 * otherwise pay for a chart.
 */
export function loadChartRenderer(feature = 'a bench chart'): Promise<[typeof import('vega'), typeof import('vega-lite')]> {
  return Promise.all([loadOptional('vega', feature, () => import('vega')), loadOptional('vega-lite', feature, () => import('vega-lite'))]);
}
