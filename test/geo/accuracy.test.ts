import { describe, expect, it } from 'vitest';

import { subdivisionAt } from '../../src/geo/index.js';
import { allCanadianFsas, allUsZipCodes } from '../../src/geo/postal.js';

/** Share of postal code centres whose coordinates resolve to the postal code's own subdivision. */
function agreement(areas: Array<{ code: string; latitude: number; longitude: number; state: string }>, country?: string): { ratio: number; wrong: string[] } {
  const wrong: string[] = [];
  for (const area of areas) {
    const resolved = subdivisionAt(area.latitude, area.longitude, country);
    if (resolved !== area.state) wrong.push(`${area.code} ${area.state} -> ${resolved ?? 'null'}`);
  }
  return { ratio: 1 - wrong.length / areas.length, wrong };
}

describe('coordinate route against the postal data', () => {
  const zips = [...allUsZipCodes()].map((z) => ({ code: z.zip, latitude: z.latitude, longitude: z.longitude, state: z.state }));

  it('covers the whole US ZIP data set, Puerto Rico included', () => {
    expect(zips.length).toBeGreaterThan(41_000);
    expect(zips.filter((z) => z.state === 'US-PR').length).toBeGreaterThan(150);
    expect(new Set(zips.map((z) => z.state)).size).toBe(57); // 50 states, DC, PR, VI, GU, AS, MP, UM
  });

  it('resolves at least 99.5% of US ZIP centres to their own state', () => {
    const withoutCountry = agreement(zips);
    const withCountry = agreement(zips, 'US');
    const percent = (r: number): string => `${(100 * r).toFixed(2)}%`;
    console.log(
      `US ZIP centres resolved to their own state: ${percent(withoutCountry.ratio)} of ${zips.length} by coordinates alone, ` +
        `${percent(withCountry.ratio)} with country US (${withCountry.wrong.length} differ, e.g. ${withCountry.wrong.slice(0, 5).join(', ')})`,
    );
    expect(withoutCountry.ratio).toBeGreaterThanOrEqual(0.995);
    expect(withCountry.ratio).toBeGreaterThanOrEqual(0.995);
  });

  it('resolves at least 99% of Canadian FSA centres to their own province', () => {
    const fsas = [...allCanadianFsas()].map((f) => ({ code: f.fsa, latitude: f.latitude, longitude: f.longitude, state: f.state }));
    const result = agreement(fsas, 'CA');
    console.log(`Canadian FSA centres resolved to their own province: ${(100 * result.ratio).toFixed(2)}% of ${fsas.length} (${result.wrong.join(', ')})`);
    expect(result.ratio).toBeGreaterThanOrEqual(0.99);
  });
});
