import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import type { Logger } from 'pino';
import { silentLogger } from '../silent-logger.ts';
import { checkInteger, checkObject, checkOneOf, expected, show } from '../validation/checks.ts';

/**
 * Which proxies in front of the server to believe: `false` (none: the socket's address is the
 * client), a number of hops (the socket and the `n − 1` addresses proxies appended before it are
 * proxies), or the proxies' addresses and CIDR ranges (`"10.0.0.0/8"`, `"::1"`, and the names
 * `"loopback"`, `"linklocal"`, `"uniquelocal"`).
 */
export type TrustProxy = false | number | readonly string[];

/** The header the trusted proxies append the client's address to. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

export const PROXY_HEADERS: readonly ProxyHeader[] = Object.freeze(['x-forwarded-for', 'forwarded'] as ProxyHeader[]);

/** How a client's address becomes its key unless told otherwise. */
export const CLIENT_ADDRESS_DEFAULTS = Object.freeze({
  /** No proxy believed: forwarding headers are ignored. */
  trustProxy: false as TrustProxy,
  /** IPv6 clients are keyed by this prefix length, in bits: one /56 is what an ISP hands one customer. */
  ipv6Subnet: 56,
  proxyHeader: 'x-forwarded-for' as ProxyHeader,
});

/** What `clientAddressKey()` takes: which proxies to trust, and which header they write the client's address in. */
export interface ClientAddressOptions {
  /** Which proxies to believe. See {@link TrustProxy}. @default CLIENT_ADDRESS_DEFAULTS.trustProxy (false: none) */
  readonly trustProxy?: TrustProxy | undefined;
  /** Prefix length in bits, an integer in [32, 64], that keys an IPv6 client. @default CLIENT_ADDRESS_DEFAULTS.ipv6Subnet (56) */
  readonly ipv6Subnet?: number | undefined;
  /** The header the trusted proxies write. @default CLIENT_ADDRESS_DEFAULTS.proxyHeader ("x-forwarded-for") */
  readonly proxyHeader?: ProxyHeader | undefined;
  /** Told once when a forwarded address cannot be read. @default silentLogger (says nothing) */
  readonly logger?: Logger | undefined;
}

/** An address as 8 hextets; IPv4 as its IPv4-mapped IPv6 form, so `1.2.3.4` and `::ffff:1.2.3.4` are one client. */
type Hextets = readonly number[];

interface Range {
  readonly hextets: Hextets;
  readonly bits: number;
}

const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

const UNKNOWN_CLIENT = 'unknown';

/**
 * A function from a request to its client's key: the client's IPv4 address, or its IPv6 address's
 * `/ipv6Subnet` prefix (`2001:db8:abcd:1200::/56`) — one customer's network, so a client cannot
 * rotate through the addresses of its own prefix for fresh buckets.
 *
 * Forwarding headers are believed only as far as `trustProxy` says: the client is the right-most
 * address that is not a trusted proxy, never the left-most (anyone can send `X-Forwarded-For:
 * 1.2.3.4`, and proxies append to what they were sent). Ports are stripped (`1.2.3.4:5678`,
 * `[::1]:80`), IPv4-mapped IPv6 folds to IPv4, and an address that cannot be read (`unknown`,
 * `_hidden`, garbage) counts as the socket's address — never as a fresh key — logged once.
 */
export function clientAddressKey(options: ClientAddressOptions = {}): (req: IncomingMessage) => string {
  checkObject('options', options);
  const {
    trustProxy = CLIENT_ADDRESS_DEFAULTS.trustProxy,
    ipv6Subnet = CLIENT_ADDRESS_DEFAULTS.ipv6Subnet,
    proxyHeader = CLIENT_ADDRESS_DEFAULTS.proxyHeader,
    logger = silentLogger,
  } = options;
  checkInteger('ipv6Subnet', ipv6Subnet, 32, 64);
  checkOneOf('proxyHeader', proxyHeader, PROXY_HEADERS);
  const trusted = trustedRanges(trustProxy);
  const keyOf = (hextets: Hextets): string => addressKey(hextets, ipv6Subnet);
  let warned = false;

  const socketKey = (req: IncomingMessage): string => {
    const address = req.socket.remoteAddress;
    if (address === undefined) return UNKNOWN_CLIENT;
    // The common case needs no parsing: Node writes IPv4 peers in canonical dotted form.
    if (isIPv4(address)) return address;
    const hextets = parseAddress(address);
    return hextets === undefined ? address : keyOf(hextets);
  };
  if (trusted === false) return socketKey;

  const unreadable = (req: IncomingMessage, entry: string): string => {
    if (!warned) {
      warned = true;
      logger.warn({ header: proxyHeader, value: show(entry) }, 'unreadable forwarded client address: limited as the socket address');
    }
    return socketKey(req);
  };

  if (typeof trusted === 'number') {
    // The socket's peer is hop 0; the client is the address `trusted` hops out, or the farthest there is.
    return (req) => {
      const entries = forwardedEntries(req.headers[proxyHeader], proxyHeader);
      if (entries.length === 0) return socketKey(req);
      const entry = entries[Math.max(0, entries.length - trusted)]!;
      const hextets = parseAddress(entry);
      return hextets === undefined ? unreadable(req, entry) : keyOf(hextets);
    };
  }

  return (req) => {
    const socketAddress = req.socket.remoteAddress;
    const socketHextets = socketAddress === undefined ? undefined : parseAddress(socketAddress);
    // A peer that is not a trusted proxy wrote the headers itself: they say nothing.
    if (socketHextets === undefined || !isTrusted(trusted, socketHextets)) return socketKey(req);
    const entries = forwardedEntries(req.headers[proxyHeader], proxyHeader);
    let hextets: Hextets = socketHextets;
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!;
      const parsed = parseAddress(entry);
      // Not an address, so not a trusted proxy: the client, unreadable.
      if (parsed === undefined) return unreadable(req, entry);
      hextets = parsed;
      if (!isTrusted(trusted, hextets)) break;
    }
    // Every address trusted: the left-most is as far as the chain goes.
    return keyOf(hextets);
  };
}

/** Reads `trustProxy` into hop count or ranges; `false` when nothing is believed. */
function trustedRanges(trustProxy: TrustProxy): number | Range[] | false {
  if (trustProxy === false || trustProxy === 0) return false;
  if (typeof trustProxy === 'number') {
    checkInteger('trustProxy', trustProxy, 0);
    return trustProxy;
  }
  if (!Array.isArray(trustProxy)) throw expected('trustProxy', 'false, a number of hops or a list of addresses and CIDRs', trustProxy);
  return trustProxy.flatMap((entry: unknown) => {
    if (typeof entry === 'string' && Object.hasOwn(NAMED_RANGES, entry)) return NAMED_RANGES[entry]!.map((cidr) => parseRange(cidr)!);
    const range = typeof entry === 'string' ? parseRange(entry) : undefined;
    if (range === undefined) throw expected('each trustProxy entry', 'an IP address, a CIDR or loopback/linklocal/uniquelocal', entry);
    return [range];
  });
}

function parseRange(cidr: string): Range | undefined {
  const slash = cidr.indexOf('/');
  const address = slash === -1 ? cidr : cidr.slice(0, slash);
  const hextets = isIPv4(address) || isIPv6(address) ? parseAddress(address) : undefined;
  if (hextets === undefined) return undefined;
  const maxBits = isIPv4(address) ? 32 : 128;
  const bits = slash === -1 ? maxBits : /^\d{1,3}$/.test(cidr.slice(slash + 1)) ? Number(cidr.slice(slash + 1)) : Number.NaN;
  if (!(bits <= maxBits)) return undefined;
  return { hextets, bits: bits + 128 - maxBits };
}

function isTrusted(trusted: readonly Range[], hextets: Hextets): boolean {
  return trusted.some((range) => inRange(range, hextets));
}

function inRange({ hextets: base, bits }: Range, hextets: Hextets): boolean {
  for (let i = 0; bits > i * 16; i++) {
    const maskBits = Math.min(16, bits - i * 16);
    const mask = (0xffff << (16 - maskBits)) & 0xffff;
    if ((base[i]! & mask) !== (hextets[i]! & mask)) return false;
  }
  return true;
}

/**
 * The addresses a forwarding header lists, left to right, as written (`Forwarded`'s `for=` values
 * unquoted; an element without one is an empty entry). A plain split on commas: a quoted comma is
 * no address, and a proper parser could let an unclosed quote from the client swallow the elements
 * the proxies appended after it.
 */
function forwardedEntries(value: string | string[] | undefined, header: ProxyHeader): string[] {
  if (value === undefined) return [];
  const text = Array.isArray(value) ? value.join(',') : value;
  if (text.trim() === '') return [];
  const elements = text.split(',');
  if (header === 'x-forwarded-for') return elements;
  return elements.map((element) => {
    // `Forwarded: for=192.0.2.60;proto=http, for="[2001:db8::17]:4711"` — one element per proxy.
    const pair = element.split(';').find((part) => /^\s*for\s*=/i.test(part));
    if (pair === undefined) return '';
    const forValue = pair.slice(pair.indexOf('=') + 1).trim();
    return forValue.startsWith('"') && forValue.endsWith('"') && forValue.length >= 2 ? forValue.slice(1, -1) : forValue;
  });
}

/**
 * An address as a client or proxy writes it — IPv4, IPv6, either with a port (`1.2.3.4:80`,
 * `[::1]:80`), IPv6 in brackets or with a zone (`fe80::1%eth0`) — as hextets; undefined when it is
 * not one.
 */
function parseAddress(written: string): Hextets | undefined {
  let address = written.trim();
  if (address.startsWith('[')) {
    const end = address.indexOf(']');
    const rest = end === -1 ? '' : address.slice(end + 1);
    if (end === -1 || (rest !== '' && !/^:\d{1,5}$/.test(rest))) return undefined;
    address = address.slice(1, end);
  } else if (/^[\d.]+:\d{1,5}$/.test(address)) {
    address = address.slice(0, address.indexOf(':'));
  }
  if (isIPv4(address)) return ipv4Hextets(address);
  if (!isIPv6(address)) return undefined;
  const zone = address.indexOf('%');
  return ipv6Hextets(zone === -1 ? address : address.slice(0, zone));
}

function ipv4Hextets(address: string): Hextets {
  const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number];
  return [0, 0, 0, 0, 0, 0xffff, (a << 8) | b, (c << 8) | d];
}

/** A valid IPv6 address (no zone) as hextets, `::` expanded and a dotted IPv4 tail read as two. */
function ipv6Hextets(address: string): Hextets {
  let text = address;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const tail = ipv4Hextets(text.slice(lastColon + 1));
    text = `${text.slice(0, lastColon + 1)}${tail[6]!.toString(16)}:${tail[7]!.toString(16)}`;
  }
  const gap = text.indexOf('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  if (gap === -1) return groups(text);
  const head = groups(text.slice(0, gap));
  const tail = groups(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** IPv4 (mapped or not) as dotted quad; IPv6 as its prefix, e.g. `2001:db8:abcd:1200::/56`. */
function addressKey(hextets: Hextets, ipv6Subnet: number): string {
  if (hextets[0] === 0 && hextets[1] === 0 && hextets[2] === 0 && hextets[3] === 0 && hextets[4] === 0 && hextets[5] === 0xffff) {
    const high = hextets[6]!;
    const low = hextets[7]!;
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  const groups: string[] = [];
  for (let i = 0; i * 16 < ipv6Subnet; i++) {
    const maskBits = Math.min(16, ipv6Subnet - i * 16);
    groups.push((hextets[i]! & ((0xffff << (16 - maskBits)) & 0xffff)).toString(16));
  }
  return `${groups.join(':')}::/${ipv6Subnet}`;
}
