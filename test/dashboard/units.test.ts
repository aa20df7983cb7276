import { describe, expect, it } from 'vitest';
import { html, trusted, href, escapeHtml } from '../../src/dashboard/html.js';
import { cellBox, cellBoxLabel, hours, inZone, utc } from '../../src/dashboard/format.js';
import { signInThrottle } from '../../src/dashboard/throttle.js';
import { cellOf } from '../../src/domain/grid.js';
import { safeNext, parseForm } from '../../src/dashboard/context.js';

describe('html', () => {
  it('escapes every interpolated value unless it is html already', () => {
    const name = `<script>alert("x")</script>'&\``;
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;&#96;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;&#96;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>ok</li>`]}</ul>`.value).toBe('<ul>&lt;a&gt;<li>ok</li></ul>');
    expect(html`${null}${undefined}${false}${0}`.value).toBe('0');
    expect(html`${trusted('<b>')}`.value).toBe('<b>');
    expect(escapeHtml('plain')).toBe('plain');
    expect(href('/loads', { q: 'a&b "c"', status: '', page: 2 })).toBe('/loads?q=a%26b+%22c%22&page=2');
  });
});

describe('format', () => {
  it('names lane cells by their box, inverse of the grid', () => {
    for (const [lat, lon] of [
      [32.7767, -96.797],
      [29.76, -95.37],
      [-33.9, 151.2],
      [0.5, 0.5],
      [45.0, -179.5],
    ] as const) {
      const b = cellBox(cellOf(lat, lon));
      expect(lat).toBeGreaterThanOrEqual(b.south);
      expect(lat).toBeLessThan(b.north);
      expect(lon).toBeGreaterThanOrEqual(b.west);
      expect(lon).toBeLessThan(b.east);
    }
    expect(cellBoxLabel(cellOf(32.7767, -96.797))).toBe('32°N–33°N, 97°W–96°W');
  });

  it('shows times in the location zone, UTC otherwise, and hours without guessing', () => {
    expect(inZone('2026-03-04T14:00:00Z', 'America/Chicago')).toBe('Wed, Mar 4, 2026, 08:00 CST');
    expect(inZone('2026-03-04T14:00:00Z', null)).toBe('2026-03-04 14:00 UTC');
    expect(inZone('2026-03-04T14:00:00Z', 'Not/AZone')).toBe('2026-03-04 14:00 UTC');
    expect(utc(null)).toBe('—');
    expect(hours('08:00', '17:00')).toBe('08:00–17:00');
    expect(hours(null, null)).toBe('not given');
  });
});

describe('forms and redirects', () => {
  it('parses repeated fields and keeps no prototype', () => {
    const f = parseForm('scopes=a&scopes=b&name=x&__proto__=y');
    expect(f.scopes).toEqual(['a', 'b']);
    expect(f.name).toBe('x');
    expect(Object.getPrototypeOf(f)).toBeNull();
  });
  it('returns only to paths on this site', () => {
    expect(safeNext('/loads?q=1')).toBe('/loads?q=1');
    for (const bad of ['//evil.example', 'https://evil.example', '/\\evil', 'loads', undefined, '/a\nb']) expect(safeNext(bad)).toBe('/');
  });
});

describe('sign-in throttle', () => {
  it('doubles the wait after the free failures, caps it, forgets after a while, and resets on success', async () => {
    let clock = 0;
    const waits: number[] = [];
    const th = signInThrottle(
      {},
      () => clock,
      async (ms) => void waits.push(ms),
    );
    const fail = () => th.attempt('A@x.example', '1.2.3.4', async () => null);
    for (let i = 0; i < 10; i++) await fail();
    expect(waits).toEqual([500, 1000, 2000, 4000, 8000, 16000, 16000]);
    expect(th.pendingDelay('a@x.example', '1.2.3.4')).toBe(16000);
    expect(th.pendingDelay('a@x.example', '1.2.3.5')).toBe(0);
    clock += 15 * 60_000 + 1;
    expect(th.pendingDelay('a@x.example', '1.2.3.4')).toBe(0);
    waits.length = 0;
    for (let i = 0; i < 5; i++) await fail();
    expect(waits).toEqual([500, 1000]);
    expect(await th.attempt('a@x.example', '1.2.3.4', async () => 'user')).toBe('user');
    expect(th.pendingDelay('a@x.example', '1.2.3.4')).toBe(0);
  });

  it('keeps its memory bounded however many emails are invented', async () => {
    const th = signInThrottle({}, Date.now, async () => {});
    for (let i = 0; i < 60_000; i++) await th.attempt(`user${i}@x.example`, '9.9.9.9', async () => null);
    expect(th.tracked()).toBeLessThanOrEqual(51_000);
  });

  it('runs attempts for one email and address one at a time and refuses beyond the queue', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const th = signInThrottle({ maxQueued: 2 }, Date.now, async () => {});
    let running = 0;
    let most = 0;
    const check = async () => {
      running++;
      most = Math.max(most, running);
      await gate;
      running--;
      return null;
    };
    const attempts = [0, 1, 2, 3].map(() => th.attempt('b@x.example', '5.6.7.8', check));
    release();
    expect(await Promise.all(attempts)).toEqual([null, null, null, null]);
    expect(most).toBe(1);
  });
});
