// Issue 26, item 4: D12's URL rules from an address library (ipaddr.js), every non-public form refused,
// the IPv4 inside IPv6 forms checked too, and a 422 that never names the address a host resolves to.
import { lookup } from 'node:dns/promises';
import { describe, expect, it } from 'vitest';
import { addressRefusal, BLOCKED_ADDRESS_MESSAGE, guardedLookup, isBlockedAddress } from '../../../src/modules/webhooks/url-policy.js';
import { useApp, json, newTenant } from '../../helpers.js';

const BASE = '/v2/tms-api/webhook-endpoints';

/** What the app's URL rules resolve host names to (anything else: the system resolver, for `localhost`). */
const DNS: Record<string, string[]> = {
  'internal.example': ['10.0.0.5'],
  'metadata.example': ['169.254.169.254'],
  'mixed.example': ['93.184.216.34', '10.0.0.5'],
  'ula.example': ['fd00::1'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'nat64-metadata.example': ['64:ff9b::a9fe:a9fe'],
  'sixtofour.example': ['2002:a00:1::1'],
  'cgnat.example': ['100.64.0.9'],
  'doc.example': ['2001:db8::10'],
  'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'dns64.example': ['64:ff9b::5db8:d822'],
};
const resolve = async (host: string) => DNS[host] ?? (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** URLs whose host is, or resolves to, an address that is not public unicast: each must be refused. */
const REFUSED: [url: string, what: string][] = [
  // IPv4 loopback, written every way the URL parser accepts
  ['https://127.0.0.1/hooks', 'loopback'],
  ['https://127.1/hooks', 'loopback, short form'],
  ['https://127.0.1/hooks', 'loopback, three parts'],
  ['https://2130706433/hooks', 'loopback, one decimal number'],
  ['https://0x7f000001/hooks', 'loopback, one hex number'],
  ['https://0177.0.0.1/hooks', 'loopback, octal'],
  ['https://0x7f.0.0.1/hooks', 'loopback, hex part'],
  ['https://%31%32%37.0.0.1/hooks', 'loopback, percent-encoded'],
  ['https://127.0.0.1./hooks', 'loopback, trailing dot'],
  ['https://127.255.255.254/hooks', 'loopback, top of 127/8'],
  // IPv4 special-use
  ['https://0.0.0.0/hooks', 'unspecified'],
  ['https://0/hooks', 'unspecified, one number'],
  ['https://0.1.2.3/hooks', '"this" network 0/8'],
  ['https://10.0.0.1/hooks', 'private 10/8'],
  ['https://10.255.255.255/hooks', 'private 10/8, top'],
  ['https://172.16.0.1/hooks', 'private 172.16/12'],
  ['https://172.31.255.254/hooks', 'private 172.16/12, top'],
  ['https://192.168.0.1/hooks', 'private 192.168/16'],
  ['https://169.254.169.254/latest/meta-data', 'link-local: cloud metadata'],
  ['https://169.254.0.1/hooks', 'link-local'],
  ['https://100.64.0.1/hooks', 'carrier-grade NAT'],
  ['https://100.127.255.254/hooks', 'carrier-grade NAT, top'],
  ['https://192.0.0.1/hooks', 'IETF protocol assignments'],
  ['https://192.0.0.170/hooks', 'NAT64 discovery (192.0.0.0/24)'],
  ['https://192.0.2.1/hooks', 'documentation TEST-NET-1'],
  ['https://198.51.100.7/hooks', 'documentation TEST-NET-2'],
  ['https://203.0.113.9/hooks', 'documentation TEST-NET-3'],
  ['https://198.18.0.1/hooks', 'benchmarking 198.18/15'],
  ['https://198.19.255.254/hooks', 'benchmarking, top'],
  ['https://192.88.99.1/hooks', '6to4 relay anycast'],
  ['https://192.175.48.1/hooks', 'AS112'],
  ['https://192.52.193.1/hooks', 'AMT'],
  ['https://224.0.0.1/hooks', 'multicast'],
  ['https://239.255.255.250/hooks', 'multicast (SSDP)'],
  ['https://240.0.0.1/hooks', 'reserved 240/4'],
  ['https://255.255.255.255/hooks', 'broadcast'],
  // IPv6 special-use
  ['https://[::1]/hooks', 'loopback'],
  ['https://[0:0:0:0:0:0:0:1]/hooks', 'loopback, long form'],
  ['https://[::]/hooks', 'unspecified'],
  ['https://[fe80::1]/hooks', 'link-local'],
  ['https://[febf::1]/hooks', 'link-local, top of fe80::/10'],
  ['https://[fc00::1]/hooks', 'unique-local'],
  ['https://[fd12:3456:789a::1]/hooks', 'unique-local fd00::/8'],
  ['https://[fec0::1]/hooks', 'site-local (deprecated) fec0::/10'],
  ['https://[feff::1]/hooks', 'site-local, top'],
  ['https://[ff02::1]/hooks', 'multicast, link scope'],
  ['https://[ff0e::1]/hooks', 'multicast, global scope'],
  ['https://[100::1]/hooks', 'discard-only 100::/64'],
  ['https://[2001:db8::1]/hooks', 'documentation 2001:db8::/32'],
  ['https://[3fff::1]/hooks', 'documentation 3fff::/20'],
  ['https://[2001:2::1]/hooks', 'benchmarking 2001:2::/48'],
  ['https://[2001:10::1]/hooks', 'ORCHID'],
  ['https://[2001:20::1]/hooks', 'ORCHIDv2'],
  ['https://[2001:3::1]/hooks', 'AMT'],
  ['https://[2001:4:112::1]/hooks', 'AS112v6'],
  ['https://[2001:1::1]/hooks', 'IETF protocol assignments 2001::/23'],
  ['https://[5f00::1]/hooks', 'segment routing'],
  ['https://[4000::1]/hooks', 'unallocated (outside 2000::/3)'],
  // IPv4 inside IPv6: mapped, translated, compatible, NAT64, 6to4, Teredo
  ['https://[::ffff:127.0.0.1]/hooks', 'IPv4-mapped loopback'],
  ['https://[::ffff:7f00:1]/hooks', 'IPv4-mapped loopback, hex'],
  ['https://[0:0:0:0:0:ffff:10.0.0.1]/hooks', 'IPv4-mapped private'],
  ['https://[::ffff:169.254.169.254]/hooks', 'IPv4-mapped metadata'],
  ['https://[::ffff:0:127.0.0.1]/hooks', 'IPv4-translated (rfc6145) loopback'],
  ['https://[::ffff:0:93.184.216.34]/hooks', 'IPv4-translated, even of a public address'],
  ['https://[::127.0.0.1]/hooks', 'IPv4-compatible loopback'],
  ['https://[::10.0.0.1]/hooks', 'IPv4-compatible private'],
  ['https://[::8.8.8.8]/hooks', 'IPv4-compatible (deprecated), even of a public address'],
  ['https://[::2]/hooks', 'IPv4-compatible 0.0.0.2'],
  ['https://[64:ff9b::127.0.0.1]/hooks', 'NAT64 of loopback'],
  ['https://[64:ff9b::a9fe:a9fe]/hooks', 'NAT64 of the metadata address'],
  ['https://[64:ff9b::10.0.0.1]/hooks', 'NAT64 of a private address'],
  ['https://[64:ff9b:1::7f00:1]/hooks', 'local-use NAT64 64:ff9b:1::/48'],
  ['https://[64:ff9b:1:ffff::1]/hooks', 'local-use NAT64'],
  ['https://[2002:7f00:1::]/hooks', '6to4 of loopback'],
  ['https://[2002:a00:1::1]/hooks', '6to4 of a private address'],
  ['https://[2002:5db8:d822::1]/hooks', '6to4 (deprecated), even of a public address'],
  ['https://[2001:0:7f00:1::]/hooks', 'Teredo, server 127.0.0.1'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hooks', 'Teredo'],
  // host names resolving to such addresses (every address checked)
  ['https://localhost:8443/hooks', 'name → loopback (system resolver)'],
  ['https://internal.example/hooks', 'name → private'],
  ['https://metadata.example/hooks', 'name → metadata'],
  ['https://mixed.example/hooks', 'name → a public and a private address'],
  ['https://ula.example/hooks', 'name → unique-local'],
  ['https://mapped.example/hooks', 'name → IPv4-mapped loopback'],
  ['https://nat64-metadata.example/hooks', 'name → NAT64 of the metadata address'],
  ['https://sixtofour.example/hooks', 'name → 6to4 of a private address'],
  ['https://cgnat.example/hooks', 'name → carrier-grade NAT'],
  ['https://doc.example/hooks', 'name → documentation'],
];

/** Refused for other reasons than the address, each with its own message. */
const REFUSED_OTHERWISE: [url: string, msg: string][] = [
  ['http://93.184.216.34/hooks', 'URL scheme should be https (for development only, the server setting WEBHOOK_ALLOW_INSECURE=on allows http)'],
  ['ftp://files.example.com/x', 'URL scheme should be https'],
  ['https://user:secret@93.184.216.34/hooks', 'URL must not contain credentials'],
  ['https://[fe80::1%25eth0]/hooks', 'Input should be a valid URL'],
  // The same message as a non-public address: a name's existence is not told apart (docs/webhooks.md).
  ['https://nowhere.invalid/hooks', BLOCKED_ADDRESS_MESSAGE],
];

/** Public addresses: accepted. */
const ACCEPTED = [
  'https://93.184.216.34/hooks',
  'https://8.8.8.8:8443/x',
  'https://[2606:2800:220:1:248:1893:25c8:1946]/hooks',
  'https://[::ffff:93.184.216.34]/hooks',
  'https://[64:ff9b::5db8:d822]/hooks',
  'https://public.example/hooks',
  'https://dns64.example/hooks',
];

const strict = useApp({ webhookAllowInsecure: false }, { webhookDelivery: 'manual', webhookResolve: resolve });

describe('URL rules: what an endpoint URL may point to', () => {
  it(`refuses ${REFUSED.length} non-public forms with one 422 that names no address, and stores none`, async () => {
    const a = await newTenant(strict);
    const accepted: string[] = [];
    for (const [url, what] of REFUSED) {
      const res = await a.post(BASE, { url });
      if (res.statusCode !== 422) {
        accepted.push(`${url} (${what}): ${res.statusCode}`);
        continue;
      }
      expect(json(res), `${url} (${what})`).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'url'], msg: BLOCKED_ADDRESS_MESSAGE }] });
    }
    expect(accepted).toEqual([]);
    expect(json(await a.get(BASE)).items).toEqual([]);
    // The message names neither the address nor the range.
    expect(BLOCKED_ADDRESS_MESSAGE).not.toMatch(/\d+\.\d+|::|resolves to/);
  });

  it('refuses a wrong scheme, credentials, a zone id and an unknown name with their own messages', async () => {
    const a = await newTenant(strict);
    for (const [url, msg] of REFUSED_OTHERWISE) {
      const res = await a.post(BASE, { url });
      expect(res.statusCode, url).toBe(422);
      expect(json(res), url).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'url'], msg }] });
    }
  });

  it('accepts public addresses, IPv4-mapped and NAT64 (64:ff9b::/96) forms of them, and names resolving only to them', async () => {
    for (const url of ACCEPTED) {
      const a = await newTenant(strict);
      const res = await a.post(BASE, { url });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
      expect(json(res)).toMatchObject({ url, status: 'enabled' });
      await a.put(`${BASE}/${json(res).id}`, { status: 'disabled' });
    }
  });

  it('the same rule on a URL change (PUT) and in the dashboard form', async () => {
    const a = await newTenant(strict);
    const ep = json(await a.post(BASE, { url: 'https://93.184.216.34/hooks' }));
    const res = await a.put(`${BASE}/${ep.id}`, { url: 'https://[::ffff:0:127.0.0.1]/hooks' });
    expect(res.statusCode).toBe(422);
    expect(json(res)).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'url'], msg: BLOCKED_ADDRESS_MESSAGE }] });
    expect(json(await a.get(`${BASE}/${ep.id}`)).url).toBe('https://93.184.216.34/hooks');
  });

  it('names the range from ipaddr.js, and checks the IPv4 inside mapped, compatible, NAT64, 6to4 and Teredo forms', () => {
    expect(addressRefusal('127.0.0.1')).toBe('loopback');
    expect(addressRefusal('198.51.100.7')).toBe('reserved');
    expect(addressRefusal('fec0::1')).toBe('deprecatedSiteLocal');
    expect(addressRefusal('2001:2::1')).toBe('benchmarking');
    expect(addressRefusal('::ffff:10.0.0.1')).toBe('ipv4Mapped/private');
    expect(addressRefusal('::ffff:0:127.0.0.1')).toBe('rfc6145/loopback');
    expect(addressRefusal('::127.0.0.1')).toBe('unicast/loopback');
    expect(addressRefusal('::8.8.8.8')).toBe('ipv4Compatible');
    expect(addressRefusal('64:ff9b::a9fe:a9fe')).toBe('rfc6052/linkLocal');
    expect(addressRefusal('64:ff9b:1::7f00:1')).toBe('rfc6052');
    expect(addressRefusal('2002:7f00:1::')).toBe('6to4/loopback');
    expect(addressRefusal('2002:5db8:d822::1')).toBe('6to4');
    // Teredo's client address is stored inverted: 3fff:fdd2 is 192.0.2.45 (documentation).
    expect(addressRefusal('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe('teredo/reserved');
    expect(addressRefusal('2001:0:7f00:1::')).toBe('teredo/loopback');
    expect(addressRefusal('4000::1')).toBe('unallocated');
    expect(addressRefusal('not-an-address')).toBe('invalid');
    for (const ok of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:93.184.216.34', '64:ff9b::5db8:d822'])
      expect(addressRefusal(ok), ok).toBeNull();
  });

  it('a connection whose name resolves to such a form as it opens is refused too (guardedLookup), with the same message', async () => {
    for (const answers of [['::ffff:127.0.0.1'], ['64:ff9b::a9fe:a9fe'], ['2002:a00:1::1'], ['93.184.216.34', 'fec0::1']]) {
      expect(answers.some(isBlockedAddress), answers.join()).toBe(true);
      const err = await new Promise<Error | null>((r) => guardedLookup(async () => answers)('receiver.example', { all: true }, (e) => r(e)));
      expect(err, answers.join()).toMatchObject({ code: 'EBLOCKEDADDRESS', message: BLOCKED_ADDRESS_MESSAGE });
    }
  });
});
