// How --help shows a run's flags: under headings, in the order a user looks for them.
import type { Command, Option } from 'commander';

/** The headings --help puts a run's flags under, and the flags under each, in order. */
export const RUN_OPTION_GROUPS: Readonly<Record<string, readonly string[]>> = {
  'The run:': [
    '--articles',
    '--workers',
    '--rate',
    '--burst',
    '--timeout',
    '--call-timeout',
    '--max-attempts',
    '--max-repairs',
    '--config',
    '--tasks',
    '--dry-run',
  ],
  'Cost and budget:': ['--price-input', '--price-output', '--price-cached-input', '--price-cache-write', '--max-cost', '--budget-key'],
  'The answer cache:': ['--cache', '--cache-ttl'],
  'Batch API:': ['--batch', '--batch-poll', '--batch-size', '--batch-articles', '--batch-queue-tokens', '--batch-fallback'],
  'Input and output:': [
    '--input',
    '--input-format',
    '--skip-invalid',
    '--output',
    '--resume',
    '--overwrite',
    '--json',
    '--quiet',
    '--log-level',
    '--otel',
    '--grid',
    '--repeat',
    '--format',
    '--chart',
    '--report',
    '--dashboard',
    '--dashboard-host',
  ],
  'Limits, retries and the breaker:': [
    '--tpm',
    '--max-output-tokens',
    '--adaptive',
    '--sync-headers',
    '--breaker-threshold',
    '--breaker-cooldown',
    '--breaker-give-up',
  ],
  'Real providers:': ['--provider', '--model', '--base-url', '--api-key-env', '--api-version'],
  'Sharing a quota through Redis:': [
    '--redis',
    '--quota-key',
    '--redis-prefix',
    '--redis-timeout',
    '--redis-fallback',
    '--fallback-share',
    '--redis-cluster',
    '--no-redis-cluster',
    '--redis-ca',
    '--redis-cert',
    '--redis-key',
  ],
  'The simulated provider:': [
    '--min-latency',
    '--max-latency',
    '--profile',
    '--seed',
    '--provider-rate',
    '--provider-burst',
    '--headers',
    '--outage',
  ],
};

/**
 * Puts each of `command`'s run flags under its heading in --help, the headings in the order above
 * (--help and --version stay first, under "Options:"); call it once every flag is added.
 */
export function groupRunOptions(command: Command): Command {
  const headings = Object.keys(RUN_OPTION_GROUPS);
  const headingOf = new Map(Object.entries(RUN_OPTION_GROUPS).flatMap(([heading, flags]) => flags.map((flag) => [flag, heading] as const)));
  const rank = (option: Option) => {
    const heading = headingOf.get(option.long ?? '');
    return heading === undefined ? -1 : headings.indexOf(heading);
  };
  for (const option of command.options) {
    const heading = headingOf.get(option.long ?? '');
    if (heading !== undefined) option.helpGroup(heading);
  }
  (command.options as Option[]).sort((a, b) => rank(a) - rank(b));
  return command;
}
