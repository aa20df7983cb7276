import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * D12's URL rules: `https` only, and a host that resolves to no loopback, private, link-local (or other
 * non-public) address, every address checked. WEBHOOK_ALLOW_INSECURE=on lifts both (development, tests).
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata at 169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** An IPv4 address embedded in an IPv6 one (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96), else null. */
function embeddedIpv4(address: string): string | null {
  const m = /^(?:::ffff:|64:ff9b::)(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an address is one a webhook may not reach (loopback, private, link-local, …). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    return v4 ? BLOCKED.check(v4, 'ipv4') : BLOCKED.check(address, 'ipv6');
  }
  return true;
}

export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

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
  if (url.protocol !== 'https:') return 'URL scheme should be https';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else if (opts.resolveNames === false) return null;
  else {
    try {
      addresses = await (opts.resolve ?? systemResolver)(host);
    } catch {
      return `Host '${host}' could not be resolved`;
    }
    if (addresses.length === 0) return `Host '${host}' could not be resolved`;
  }
  const blocked = addresses.find(isBlockedAddress);
  return blocked ? blockedText(host, blocked) : null;
}

const blockedText = (host: string, address: string) => `URL must not resolve to a loopback, private or link-local address (${host} resolves to ${address})`;

/** A delivery's connection refused because its host resolved to a blocked address as it connected. */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
  constructor(host: string, address: string) {
    super(blockedText(host, address));
  }
}

/**
 * The lookup a delivery connects with (undici's `connect.lookup`, handed to net/tls): the addresses the
 * socket is opened to are the ones checked. A name that passed `urlProblem` and then resolves to a
 * private address (DNS rebinding, a short TTL) is refused here, where a second, unchecked resolution
 * would otherwise have let the connection in. Every address is checked, as in `urlProblem`.
 */
export function guardedLookup(resolve: Resolver = systemResolver): LookupFunction {
  return (hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter((a) => isIP(a) !== 0 && (!options.family || options.family === isIP(a)));
        if (usable.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        const blocked = addresses.find(isBlockedAddress);
        if (blocked) return callback(new BlockedAddressError(hostname, blocked), '', 0);
        if (options.all) return callback(null, usable.map((address) => ({ address, family: isIP(address) })));
        callback(null, usable[0]!, isIP(usable[0]!));
      },
      (err: NodeJS.ErrnoException) => callback(Object.assign(err, { code: err.code ?? 'ENOTFOUND' }), '', 0),
    );
  };
}
