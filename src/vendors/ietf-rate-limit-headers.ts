import { LIMIT_KINDS, type LimitKind } from '../provider/rate-limit-signals.ts';
import { ietfPolicyMember, ietfStatusMember } from '../middleware/ietf-headers.ts';
import {
  first,
  list,
  parseCount,
  parseDecimal,
  pushStatus,
  type HeaderFields,
  type HeaderFormat,
  type LimitStatus,
} from './header-fields.ts';

/**
 * The IETF draft's rate-limit fields (draft-ietf-httpapi-ratelimit-headers):
 * `RateLimit: "default";r=50;t=30` with `RateLimit-Policy: "default";q=100;w=60`, and the older
 * drafts' `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds) and
 * `RateLimit: limit=100, remaining=50, reset=30`. Written as the current draft has them.
 */
export const IETF_HEADERS: HeaderFormat = {
  kinds: LIMIT_KINDS,
  parse: parseIetf,
  write(headers, status) {
    if (status.length === 0) return;
    headers['ratelimit-policy'] = status
      .map(({ kind, limit, windowMs }) =>
        ietfPolicyMember({
          name: kind,
          quota: limit,
          unit: kind === 'requests' ? undefined : kind,
          windowSeconds: windowMs === undefined ? undefined : Math.ceil(windowMs / 1000),
        }),
      )
      .join(', ');
    headers.ratelimit = status
      .map(({ kind, remaining, resetMs }) => ietfStatusMember(kind, remaining, Math.ceil(resetMs / 1000)))
      .join(', ');
  },
};

function parseIetf(context: HeaderFields): LimitStatus[] {
  const limits: LimitStatus[] = [];
  const current = list(context, 'ratelimit');
  const dictionary = current === undefined ? undefined : parseLegacyDictionary(current);
  const seconds = (value: string | undefined): number | undefined => {
    const parsed = parseDecimal(value);
    return parsed === undefined ? undefined : context.capMs(parsed * 1000);
  };

  // Older drafts: separate fields, or one dictionary; the quota's unit was the server's business,
  // requests in practice.
  const legacyLimit = first(context, 'ratelimit-limit')?.split(',')[0]?.split(';')[0]?.trim();
  pushStatus(limits, {
    kind: 'requests',
    limit: parseCount(legacyLimit) ?? parseCount(dictionary?.get('limit')),
    remaining: parseCount(first(context, 'ratelimit-remaining')) ?? parseCount(dictionary?.get('remaining')),
    resetMs: seconds(first(context, 'ratelimit-reset')) ?? seconds(dictionary?.get('reset')),
  });

  const policies = parsePolicyList(list(context, 'ratelimit-policy'));
  const statuses = dictionary === undefined ? parsePolicyList(current) : new Map<string, ReadonlyMap<string, string>>();
  for (const name of new Set([...policies.keys(), ...statuses.keys()])) {
    const policy = policies.get(name);
    const status = statuses.get(name);
    const kind = unitKind(policy?.get('qu') ?? 'requests');
    // A unit we do not count in (content-bytes, concurrent-requests) must not pass for requests.
    if (kind === undefined) continue;
    const windowSeconds = parseDecimal(policy?.get('w'));
    pushStatus(limits, {
      kind,
      limit: parseCount(policy?.get('q')),
      remaining: parseCount(status?.get('r')),
      resetMs: seconds(status?.get('t')),
      policy: name,
      windowMs: windowSeconds === undefined || windowSeconds === 0 ? undefined : windowSeconds * 1000,
    });
  }
  return limits;
}

function unitKind(unit: string): LimitKind | undefined {
  return (LIMIT_KINDS as readonly string[]).includes(unit) ? (unit as LimitKind) : undefined;
}

/**
 * A structured-field list of named policies (`"default";q=100;w=60, daily;q=1000`): name → params.
 * Members that are not a string or token (older drafts' bare `100;w=60`) are skipped; a name given
 * twice keeps its first.
 */
function parsePolicyList(value: string | undefined): Map<string, ReadonlyMap<string, string>> {
  const policies = new Map<string, ReadonlyMap<string, string>>();
  if (value === undefined) return policies;
  for (const member of splitOutsideQuotes(value, ',')) {
    const [item = '', ...rawParams] = splitOutsideQuotes(member, ';');
    const name = parseName(item.trim());
    if (name === undefined || policies.has(name)) continue;
    const params = new Map<string, string>();
    for (const rawParam of rawParams) {
      const param = /^\s*([a-z*][a-z0-9_\-.*]*)\s*(?:=\s*(.*?))?\s*$/i.exec(rawParam);
      const key = param?.[1]?.toLowerCase();
      if (key === undefined || params.has(key)) continue;
      params.set(key, unquote(param![2] ?? '?1'));
    }
    policies.set(name, params);
  }
  return policies;
}

/** The older drafts' `RateLimit: limit=100, remaining=50, reset=30`; undefined when the field is not that form. */
function parseLegacyDictionary(value: string): Map<string, string> | undefined {
  const entries = new Map<string, string>();
  for (const member of value.split(',')) {
    const entry = /^\s*(limit|remaining|reset)\s*=\s*([^;\s]*)\s*(?:;.*)?$/i.exec(member);
    if (entry === null) return undefined;
    const key = entry[1]!.toLowerCase();
    if (!entries.has(key)) entries.set(key, entry[2]!);
  }
  return entries;
}

function parseName(item: string): string | undefined {
  if (/^"(?:[^"\\]|\\.)*"$/.test(item)) return unquote(item);
  return /^[a-z*][\w!#$%&'*+\-.^`|~:/]*$/i.test(item) ? item : undefined;
}

function unquote(value: string): string {
  return /^"(?:[^"\\]|\\.)*"$/.test(value) ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
}

/** Splits on `separator` where it is not inside a quoted string. */
function splitOutsideQuotes(value: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const char = value[i];
    if (quoted && char === '\\') i++;
    else if (char === '"') quoted = !quoted;
    else if (!quoted && char === separator) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts;
}
