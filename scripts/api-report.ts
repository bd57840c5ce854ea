// The public API of each entry point, as API Extractor reports it: one `docs/api/<entry>.api.md`
// per entry point, committed, so that a change of the public API shows in review.
//
//   npm run api      rewrites the reports from the declarations `npm run build` wrote
//
// `test/package/api-report.test.ts` fails when a report differs from the committed one, and when an
// entry point's exports reference a type it does not export (a type a user could not import).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig, ExtractorLogLevel, type ExtractorMessage } from '@microsoft/api-extractor';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Each entry point: its report's name, and its compiled declarations. */
export const ENTRY_POINTS: readonly { readonly name: string; readonly declarations: string }[] = Object.freeze([
  { name: 'news-processor', declarations: 'dist/src/index.d.ts' },
  { name: 'news-processor-mechanisms', declarations: 'dist/src/mechanisms.d.ts' },
  { name: 'news-processor-plan', declarations: 'dist/src/plan.d.ts' },
  { name: 'news-processor-routes', declarations: 'dist/src/routes.d.ts' },
  { name: 'news-processor-sinks', declarations: 'dist/src/sinks/index.d.ts' },
  { name: 'news-processor-telemetry', declarations: 'dist/src/telemetry/index.d.ts' },
  { name: 'news-processor-middleware', declarations: 'dist/src/middleware/index.d.ts' },
  { name: 'news-processor-redis', declarations: 'dist/src/redis/index.d.ts' },
  { name: 'news-processor-queue', declarations: 'dist/src/queue/index.d.ts' },
  { name: 'news-processor-batch', declarations: 'dist/src/batch/index.d.ts' },
  { name: 'news-processor-server', declarations: 'dist/src/server/index.d.ts' },
  { name: 'news-processor-bench', declarations: 'dist/src/bench/index.d.ts' },
  { name: 'news-processor-testing', declarations: 'dist/src/testing/index.d.ts' },
  { name: 'news-processor-vendors', declarations: 'dist/src/vendors/index.d.ts' },
]);

export const REPORT_FOLDER = join(ROOT, 'docs', 'api');

export interface ReportOutcome {
  /** The report differs from the committed one (with `update`, it has been rewritten). */
  readonly changed: boolean;
  /** Types the exports reference but the entry point does not export. */
  readonly forgotten: readonly string[];
  /** Anything else API Extractor warned of. */
  readonly problems: readonly string[];
  /** Where the fresh report was written when it differs and `update` is off. */
  readonly tempPath: string;
}

/** Runs API Extractor on one entry point; `update` rewrites its committed report. */
export function apiReport(entry: (typeof ENTRY_POINTS)[number], update: boolean): ReportOutcome {
  const tempFolder = join(ROOT, 'dist', 'api-report');
  mkdirSync(tempFolder, { recursive: true });
  const mainEntryPointFilePath = join(ROOT, entry.declarations);
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: ROOT,
      mainEntryPointFilePath,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: 'es2022',
            module: 'nodenext',
            moduleResolution: 'nodenext',
            strict: true,
            skipLibCheck: true,
            types: ['node'],
          },
          files: [mainEntryPointFilePath],
        },
      },
      apiReport: { enabled: true, reportFileName: entry.name, reportFolder: REPORT_FOLDER, reportTempFolder: tempFolder },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
        extractorMessageReporting: {
          default: { logLevel: ExtractorLogLevel.None },
          'ae-forgotten-export': { logLevel: ExtractorLogLevel.Warning },
        },
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: join(ROOT, 'package.json'),
  });
  const forgotten: string[] = [];
  const problems: string[] = [];
  const result = Extractor.invoke(config, {
    localBuild: update,
    messageCallback: (message: ExtractorMessage) => {
      message.handled = true;
      if (message.messageId === 'ae-forgotten-export') forgotten.push(/"([^"]+)"/.exec(message.text)?.[1] ?? message.text);
      else if (message.logLevel === ExtractorLogLevel.Warning || message.logLevel === ExtractorLogLevel.Error) problems.push(message.text);
    },
  });
  return {
    changed: result.apiReportChanged,
    forgotten: [...new Set(forgotten)].sort(),
    problems,
    tempPath: join(tempFolder, `${entry.name}.api.md`),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(REPORT_FOLDER, { recursive: true });
  for (const entry of ENTRY_POINTS) {
    const outcome = apiReport(entry, true);
    process.stderr.write(`docs/api/${entry.name}.api.md: ${outcome.changed ? 'rewritten' : 'unchanged'}\n`);
    for (const name of outcome.forgotten) process.stderr.write(`  referenced but not exported: ${name}\n`);
    for (const problem of outcome.problems) process.stderr.write(`  ${problem}\n`);
  }
}
