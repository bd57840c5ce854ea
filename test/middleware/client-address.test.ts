import type { IncomingMessage } from 'node:http';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CLIENT_ADDRESS_DEFAULTS, type ClientAddressOptions, clientAddressKey } from '../../src/middleware/client-address.ts';

/** A request as the key function reads it: the socket's peer and the headers. */
function request(remoteAddress: string | undefined, headers: Record<string, string | string[]> = {}): IncomingMessage {
  return { socket: { remoteAddress }, headers } as unknown as IncomingMessage;
}

/** A logger that keeps what it is told. */
function recordingLogger() {
  const lines: { level: number; msg: string; value?: string }[] = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('clientAddressKey()', () => {
  it('defaults to the socket address, no proxy believed, IPv6 by /56', () => {
    expect(CLIENT_ADDRESS_DEFAULTS).toEqual({ trustProxy: false, ipv6Subnet: 56, proxyHeader: 'x-forwarded-for' });
    expect(Object.isFrozen(CLIENT_ADDRESS_DEFAULTS)).toBe(true);
  });

  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:cb00:7107', '203.0.113.7'],
    ['2001:db8:abcd:12ff:1:2:3:4', '2001:db8:abcd:1200::/56'],
    ['2001:DB8:ABCD:1234::9', '2001:db8:abcd:1200::/56'],
    ['2001:db8:abcd:1300::1', '2001:db8:abcd:1300::/56'],
    ['::1', '0:0:0:0::/56'],
    ['fe80::1%eth0', 'fe80:0:0:0::/56'],
    ['64:ff9b::198.51.100.1', '64:ff9b:0:0::/56'],
    [undefined, 'unknown'],
  ])('keys the socket address %o as %o', (remoteAddress, key) => {
    expect(clientAddressKey()(request(remoteAddress))).toBe(key);
  });

  it.each([
    [32, '2001:db8::/32'],
    [48, '2001:db8:abcd::/48'],
    [64, '2001:db8:abcd:12ff::/64'],
    [60, '2001:db8:abcd:12f0::/60'],
  ])('keys IPv6 by its /%i prefix', (ipv6Subnet, key) => {
    expect(clientAddressKey({ ipv6Subnet })(request('2001:db8:abcd:12ff:1:2:3:4'))).toBe(key);
  });

  it('ignores forwarding headers unless trustProxy says which proxies to believe', () => {
    const key = clientAddressKey();
    expect(key(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7', forwarded: 'for=198.51.100.1' }))).toBe('127.0.0.1');
  });

  // The socket's peer is 10.0.0.2 (a proxy) in every row.
  it.each<[string, ClientAddressOptions, Record<string, string | string[]>, string]>([
    ['one hop: the right-most entry', { trustProxy: 1 }, { 'x-forwarded-for': '198.51.100.1, 203.0.113.7' }, '203.0.113.7'],
    ['two hops: the second from the right', { trustProxy: 2 }, { 'x-forwarded-for': '198.51.100.1, 203.0.113.7, 10.0.0.9' }, '203.0.113.7'],
    ['more hops than entries: the left-most there is', { trustProxy: 3 }, { 'x-forwarded-for': '203.0.113.7' }, '203.0.113.7'],
    ['one hop, no header: the socket', { trustProxy: 1 }, {}, '10.0.0.2'],
    ['a forged left-most entry is never the client', { trustProxy: 1 }, { 'x-forwarded-for': '1.1.1.1, 203.0.113.7' }, '203.0.113.7'],
    ['a port is stripped', { trustProxy: 1 }, { 'x-forwarded-for': '203.0.113.7:5678' }, '203.0.113.7'],
    ['a bracketed IPv6 with a port', { trustProxy: 1 }, { 'x-forwarded-for': '[2001:db8:abcd:12ff::1]:443' }, '2001:db8:abcd:1200::/56'],
    ['IPv4-mapped folds to IPv4', { trustProxy: 1 }, { 'x-forwarded-for': '::ffff:203.0.113.7' }, '203.0.113.7'],
    ['repeated header lines are one list', { trustProxy: 1 }, { 'x-forwarded-for': ['1.1.1.1', '203.0.113.7'] }, '203.0.113.7'],
    [
      'CIDRs: the right-most address not in them',
      { trustProxy: ['10.0.0.0/8', '192.168.0.0/16'] },
      { 'x-forwarded-for': '1.1.1.1, 203.0.113.7, 192.168.1.1, 10.9.9.9' },
      '203.0.113.7',
    ],
    ['CIDRs, every entry trusted: the left-most', { trustProxy: ['uniquelocal'] }, { 'x-forwarded-for': '10.1.1.1, 10.2.2.2' }, '10.1.1.1'],
    ['CIDRs: a single address', { trustProxy: ['10.0.0.2'] }, { 'x-forwarded-for': '203.0.113.7' }, '203.0.113.7'],
    [
      'Forwarded: the right-most for=',
      { trustProxy: 1, proxyHeader: 'forwarded' },
      { forwarded: 'for=1.1.1.1;proto=http, For="[2001:db8:abcd:12ff::17]:4711";by=10.0.0.2' },
      '2001:db8:abcd:1200::/56',
    ],
    [
      'Forwarded is not read when the proxies write X-Forwarded-For',
      { trustProxy: 1 },
      { forwarded: 'for=1.1.1.1', 'x-forwarded-for': '203.0.113.7' },
      '203.0.113.7',
    ],
    [
      'a quote left open by the client cannot swallow what the proxy appended',
      { trustProxy: 1, proxyHeader: 'forwarded' },
      { forwarded: 'for=1.1.1.1;x="oops, for=203.0.113.7' },
      '203.0.113.7',
    ],
  ])('%s', (_, options, headers, key) => {
    expect(clientAddressKey(options)(request('10.0.0.2', headers))).toBe(key);
  });

  it('believes no header from a peer that is not a trusted proxy', () => {
    const key = clientAddressKey({ trustProxy: ['10.0.0.0/8'] });
    expect(key(request('203.0.113.50', { 'x-forwarded-for': '1.1.1.1' }))).toBe('203.0.113.50');
    expect(key(request('::ffff:10.0.0.2', { 'x-forwarded-for': '1.1.1.1' }))).toBe('1.1.1.1');
  });

  it.each([
    ['unknown', { trustProxy: 1 }, { 'x-forwarded-for': 'unknown' }],
    ['garbage', { trustProxy: 1 }, { 'x-forwarded-for': '1.1.1.1, <script>' }],
    ['an obfuscated Forwarded node', { trustProxy: 1, proxyHeader: 'forwarded' }, { forwarded: 'for=_hidden' }],
    ['a Forwarded element without for=', { trustProxy: 1, proxyHeader: 'forwarded' }, { forwarded: 'proto=https' }],
    ['an address with a bad port', { trustProxy: 1 }, { 'x-forwarded-for': '[::1]:http' }],
    ['a CIDR walk that meets garbage', { trustProxy: ['10.0.0.0/8'] }, { 'x-forwarded-for': '1.1.1.1, nonsense, 10.0.0.5' }],
  ] as [string, ClientAddressOptions, Record<string, string>][])(
    'counts %s as the socket address, never a fresh key, and says so once',
    (_, options, headers) => {
      const { logger, lines } = recordingLogger();
      const key = clientAddressKey({ ...options, logger });
      expect(key(request('10.0.0.2', headers))).toBe('10.0.0.2');
      expect(key(request('10.0.0.2', headers))).toBe('10.0.0.2');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.msg).toBe('unreadable forwarded client address: limited as the socket address');
      expect(lines[0]!.level).toBe(40);
    },
  );

  it.each([
    [{ trustProxy: true }, 'Expected trustProxy to be false, a number of hops or a list of addresses and CIDRs, got true'],
    [{ trustProxy: -1 }, 'Expected trustProxy to be an integer >= 0, got -1'],
    [{ trustProxy: 1.5 }, 'Expected trustProxy to be an integer >= 0, got 1.5'],
    [{ trustProxy: 'loopback' }, 'Expected trustProxy to be false, a number of hops or a list of addresses and CIDRs, got "loopback"'],
    [
      { trustProxy: ['10.0.0.0/33'] },
      'Expected each trustProxy entry to be an IP address, a CIDR or loopback/linklocal/uniquelocal, got "10.0.0.0/33"',
    ],
    [
      { trustProxy: ['::/129'] },
      'Expected each trustProxy entry to be an IP address, a CIDR or loopback/linklocal/uniquelocal, got "::/129"',
    ],
    [
      { trustProxy: ['proxy.internal'] },
      'Expected each trustProxy entry to be an IP address, a CIDR or loopback/linklocal/uniquelocal, got "proxy.internal"',
    ],
    [
      { trustProxy: ['toString'] },
      'Expected each trustProxy entry to be an IP address, a CIDR or loopback/linklocal/uniquelocal, got "toString"',
    ],
    [{ trustProxy: [10] }, 'Expected each trustProxy entry to be an IP address, a CIDR or loopback/linklocal/uniquelocal, got 10'],
    [{ ipv6Subnet: 31 }, 'Expected ipv6Subnet to be an integer in [32, 64], got 31'],
    [{ ipv6Subnet: 65 }, 'Expected ipv6Subnet to be an integer in [32, 64], got 65'],
    [{ proxyHeader: 'x-real-ip' }, 'Expected proxyHeader to be one of "x-forwarded-for", "forwarded", got "x-real-ip"'],
    [null, 'Expected options to be an object, got null'],
  ])('throws a TypeError for %o', (options, message) => {
    expect(() => clientAddressKey(options as unknown as ClientAddressOptions)).toThrow(new TypeError(message));
  });
});
