import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig, ExtractorLogLevel, type ExtractorMessage } from '@microsoft/api-extractor';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The names API Extractor finds referenced by an entry point's exports but not exported by it
 * (`ae-forgotten-export`): a type a user would have to spell out but could not import. Reads the
 * declarations `npm test` has just built.
 */
function forgottenExports(entry: string): string[] {
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: ROOT,
      mainEntryPointFilePath: join(ROOT, entry),
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
          files: [join(ROOT, entry)],
        },
      },
      apiReport: { enabled: false },
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
  Extractor.invoke(config, {
    localBuild: true,
    messageCallback: (message: ExtractorMessage) => {
      message.handled = true;
      if (message.messageId === 'ae-forgotten-export') forgotten.push(/"([^"]+)"/.exec(message.text)?.[1] ?? message.text);
      else if (message.logLevel === ExtractorLogLevel.Warning || message.logLevel === ExtractorLogLevel.Error) problems.push(message.text);
    },
  });
  expect(problems).toEqual([]);
  return [...new Set(forgotten)].sort();
}

describe('the declarations a user imports', () => {
  it('news-processor exports every type that its exported functions and classes take or return', () => {
    expect(forgottenExports('dist/src/index.d.ts')).toEqual([]);
  }, 60_000);

  it('news-processor/testing exports its own types; the rest come from the root', async () => {
    const root = await import('../../src/index.ts');
    const fromTesting = forgottenExports('dist/src/testing/index.d.ts');
    // Types only (interfaces, aliases) have no runtime name to compare: the root's declarations say which it has.
    const rootDeclarations = await import('node:fs/promises').then((fs) => fs.readFile(join(ROOT, 'dist/src/index.d.ts'), 'utf8'));
    const missing = fromTesting.filter((name) => !(name in root) && !new RegExp(`\\b${name}\\b`).test(rootDeclarations));
    expect(missing).toEqual([]);
  }, 60_000);
});
