import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, REMOVED_SETTINGS, loadConfig, operatorSettings, removedSettingsSet } from '../src/config.js';

// Settings are declared once (src/config.ts, SETTINGS); README.md's Configuration table is checked against
// that declaration: every setting a row, every row a setting, the same defaults, a reason to change each.

const readme = readFileSync(join(process.cwd(), 'README.md'), 'utf8');
const section = (from: string, to: string) => readme.slice(readme.indexOf(from), readme.indexOf(to, readme.indexOf(from)));
/** The rows of the markdown tables in `text`: their cells, header and separator rows left out. */
const rows = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) =>
      l
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim()),
    );

const table = rows(section('## Configuration', '### Settings removed in this version'));
const removedTable = rows(section('### Settings removed in this version', '## Running on PostgreSQL'));

describe('settings', () => {
  it('are at most 25', () => {
    expect(operatorSettings().length).toBeLessThanOrEqual(25);
  });

  it("README.md's table has a row for every setting and a setting for every row, with its default and why to change it", () => {
    const declared = operatorSettings().map((s) => s.env);
    const documented = table.map(([name]) => name!.replace(/`/g, ''));
    expect([...documented].sort()).toEqual([...declared].sort());
    expect(new Set(documented).size).toBe(documented.length);
    for (const s of operatorSettings()) {
      const row = table.find(([name]) => name === `\`${s.env}\``)!;
      expect(row[1], s.env).toBe(s.default === undefined ? 'unset' : `\`${String(s.default)}\``);
      expect(row[2]?.length ?? 0, s.env).toBeGreaterThan(20);
    }
  });

  it('removed ones are listed in README.md, are not settings, and are ignored with a warning', () => {
    const listed = removedTable.flatMap(([names]) => [...names!.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]));
    expect([...listed].sort()).toEqual(Object.keys(REMOVED_SETTINGS).sort());
    const names = new Set(operatorSettings().map((s) => s.env));
    for (const name of Object.keys(REMOVED_SETTINGS)) expect(names.has(name), name).toBe(false);
    const env = { LANE_RADIUS_MILES: '250', LOAD_BATCH_DEADLINE_MS: '600000', RATE_LIMITS: 'off' };
    const config = loadConfig(env);
    expect([config.laneRadiusMiles, config.loadBatchDeadlineMs, config.rateLimits]).toEqual([100, 55_000, true]);
    const warnings = removedSettingsSet(env);
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(/^LANE_RADIUS_MILES is set but no longer read/);
    expect(removedSettingsSet({ PORT: '1' })).toEqual([]);
  });

  it('a bad value stops the start with a message naming the setting, the choices and what was given', () => {
    expect(() => loadConfig({ DASHBOARD_COOKIE_SECURE: 'maybe', PORT: 'abc' })).toThrow(
      `Invalid environment: PORT: Expected integer, got "abc"; DASHBOARD_COOKIE_SECURE: expected one of 'auto', 'on', 'off', got "maybe"`,
    );
  });

  it('defaults are those of the declaration, converted to the fields', () => {
    const c = loadConfig({});
    expect([c.port, c.requestTimeoutMs, c.webhookWorker, c.trustProxy, c.redisUrl]).toEqual([8080, 60_000, true, false, undefined]);
    expect(loadConfig({ REQUEST_TIMEOUT_SECONDS: '1.5', IMPORT_WORKER: 'off' })).toMatchObject({ requestTimeoutMs: 1500, importWorker: false });
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });

  it('internal fields come from LANEBRIDGE_INTERNAL (tests and benchmarks), checked against their schema', () => {
    expect(loadConfig({ LANEBRIDGE_INTERNAL: '{"rateLimits":false,"importChunkRows":100}' })).toMatchObject({ rateLimits: false, importChunkRows: 100 });
    expect(() => loadConfig({ LANEBRIDGE_INTERNAL: '{"loadBatchDeadlineMs":600000}' })).toThrow(ConfigError);
    expect(() => loadConfig({ LANEBRIDGE_INTERNAL: '{"laneRadiusMiles":250}' })).toThrow(ConfigError);
    expect(() => loadConfig({ LANEBRIDGE_INTERNAL: '{"port":1}' })).toThrow(/port is not an internal field/);
    expect(() => loadConfig({ LANEBRIDGE_INTERNAL: 'off' })).toThrow(/not JSON/);
    // A share larger than the whole is the whole.
    expect(loadConfig({ LANEBRIDGE_INTERNAL: '{"webhookMaxInFlight":8}' }).webhookMaxInFlightPerOrg).toBe(8);
  });
});
