import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The URL rules (docs/webhooks.md, "URL rules (SSRF)"): `https` only, and a host whose every address is
 * public unicast. The ranges come from ipaddr.js (`range()`: loopback, private, linkLocal, uniqueLocal,
 * carrierGradeNat, reserved (which holds the documentation and benchmarking blocks), ipv4Mapped,
 * rfc6145, rfc6052, 6to4, teredo, multicast, …): anything it does not call `unicast` is refused, so a
 * range it learns in a later release is refused here without a change. WEBHOOK_ALLOW_INSECURE=on lifts
 * both rules (development, tests).
 */

/** IANA's global unicast space: an IPv6 address outside it is refused even when ipaddr.js names no range for it. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
/** NAT64's well-known prefix (RFC 6052), where a DNS64 resolver puts an IPv4-only host's address. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];
/** IPv4-compatible addresses (RFC 4291, deprecated): `::a.b.c.d`. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];

/**
 * IPv6 forms that carry an IPv4 address and reach it: allowed when the IPv4 inside is (an address a
 * resolver can hand us on a dual-stack host, AI_V4MAPPED, or on an IPv6-only network, DNS64).
 */
const TRANSLATED = new Set(['ipv4Mapped', 'rfc6052']);

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/**
 * The IPv4 addresses written inside an IPv6 one: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
 * (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d), 6to4 (2002:AABB:CCDD::)
 * and Teredo (its server's address, and its client's, stored inverted).
 */
export function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = address.parts;
  const range = address.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || address.match(NAT64_WELL_KNOWN)) return [v4(p[6]!, p[7]!)];
  if (address.match(IPV4_COMPATIBLE) && range !== 'unspecified' && range !== 'loopback') return [v4(p[6]!, p[7]!)];
  if (range === '6to4') return [v4(p[1]!, p[2]!)];
  if (range === 'teredo') return [v4(p[2]!, p[3]!), v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
  return [];
}

/**
 * The address as ipaddr.js should read it. An IPv6 address ending in dotted IPv4 is rewritten in hex
 * first: ipaddr.js reads `::a.b.c.d` (IPv4-compatible, what the socket would connect to and what glibc's
 * inet_ntop prints for ::7f00:1) as IPv4-mapped `::ffff:a.b.c.d`.
 */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  if (isIP(address) === 6) {
    const hex = address.replace(
      /(\d+)\.(\d+)\.(\d+)\.(\d+)(%.*)?$/,
      (_m, a: string, b: string, c: string, d: string, zone: string | undefined) =>
        `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}${zone ?? ''}`,
    );
    return ipaddr.IPv6.parse(hex);
  }
  return ipaddr.IPv4.parse(address);
}

/**
 * Why an IP address may not be connected to (the range's name, as ipaddr.js spells it, or the form
 * refused), or null when it may: a public unicast IPv4; an IPv6 in 2000::/3 that ipaddr.js calls
 * unicast; an IPv4-mapped or NAT64 (64:ff9b::/96) address whose IPv4 is allowed. Every other form is
 * refused (IPv4-compatible, IPv4-translated, 6to4, Teredo, local-use NAT64 64:ff9b:1::/48, site-local,
 * unique-local, documentation, benchmarking, reserved, multicast …), and the IPv4 inside any of them is
 * checked as well. Not an address at all: 'invalid'.
 */
export function addressRefusal(address: string): string | null {
  if (isIP(address) === 0) return 'invalid';
  const parsed = parseAddress(address);
  if (parsed.kind() === 'ipv4') {
    const range = (parsed as ipaddr.IPv4).range();
    return range === 'unicast' ? null : range;
  }
  const v6 = parsed as ipaddr.IPv6;
  if (v6.zoneId) return 'scoped';
  const range = v6.range();
  for (const inner of embeddedIpv4(v6)) {
    const innerRange = inner.range();
    if (innerRange !== 'unicast') return `${range}/${innerRange}`;
  }
  if (TRANSLATED.has(range)) return range === 'ipv4Mapped' || v6.match(NAT64_WELL_KNOWN) ? null : range;
  if (range !== 'unicast') return range;
  if (v6.match(IPV4_COMPATIBLE)) return 'ipv4Compatible';
  if (!v6.match(GLOBAL_UNICAST_V6)) return 'unallocated';
  return null;
}

/** Whether an address is one a webhook may not reach (not public unicast). */
export function isBlockedAddress(address: string): boolean {
  return addressRefusal(address) !== null;
}

export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The one answer for a refused address: it names neither the address nor the range, so the 422 and the
 * delivery log cannot be used to map what a host name resolves to inside the network.
 */
// One message for a host with no address and one with a non-public address: two would tell a caller
// which internal names exist (docs/webhooks.md).
export const BLOCKED_ADDRESS_MESSAGE =
  'URL must point to a public host: this one has no address, or a loopback, private, link-local or other non-public one (for development only, the server setting WEBHOOK_ALLOW_INSECURE=on lifts this rule)';
/** Plain http, refused unless the server's WEBHOOK_ALLOW_INSECURE is on. */
export const HTTPS_ONLY_MESSAGE = 'URL scheme should be https (for development only, the server setting WEBHOOK_ALLOW_INSECURE=on allows http)';

/**
 * Why `text` may not be a webhook URL, or null when it may. `allowInsecure` lifts the https and address
 * rules (the URL must still be http(s) and well formed). Resolution failures refuse the URL.
 * `resolveNames: false` checks all but a host name's addresses: for a caller whose connections check
 * the addresses they open (the delivery worker, through guardedLookup), so a name is resolved once.
 */
export async function urlProblem(text: string, opts: { allowInsecure: boolean; resolve?: Resolver; resolveNames?: boolean }): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'Input should be a valid URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'URL scheme should be https';
  if (url.username || url.password) return 'URL must not contain credentials';
  if (opts.allowInsecure) return null;
  if (url.protocol !== 'https:') return HTTPS_ONLY_MESSAGE;
  // The WHATWG parser has already turned 127.1, 2130706433, 0x7f.0.0.1 and 0177.0.0.1 into 127.0.0.1.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else if (opts.resolveNames === false) return null;
  else {
    try {
      addresses = await (opts.resolve ?? systemResolver)(host);
    } catch {
      return BLOCKED_ADDRESS_MESSAGE;
    }
    if (addresses.length === 0) return BLOCKED_ADDRESS_MESSAGE;
  }
  return addresses.some(isBlockedAddress) ? BLOCKED_ADDRESS_MESSAGE : null;
}

/** A delivery's connection refused because its host resolved to a blocked address as it connected. */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
  constructor() {
    super(BLOCKED_ADDRESS_MESSAGE);
  }
}

/**
 * The lookup a delivery connects with (undici's `connect.lookup`, handed to net/tls): the addresses the
 * socket is opened to are the ones checked. A name that passed `urlProblem` and then resolves to a
 * private address (DNS rebinding, a short TTL) is refused here, where a second, unchecked resolution
 * would otherwise have let the connection in. Every address is checked, as in `urlProblem`.
 */
export function guardedLookup(resolve: Resolver = systemResolver): LookupFunction {
  return (
    hostname: string,
    options: LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter((a) => isIP(a) !== 0 && (!options.family || options.family === isIP(a)));
        if (usable.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        if (addresses.some(isBlockedAddress)) return callback(new BlockedAddressError(), '', 0);
        if (options.all)
          return callback(
            null,
            usable.map((address) => ({ address, family: isIP(address) })),
          );
        callback(null, usable[0]!, isIP(usable[0]!));
      },
      (err: NodeJS.ErrnoException) => callback(Object.assign(err, { code: err.code ?? 'ENOTFOUND' }), '', 0),
    );
  };
}
