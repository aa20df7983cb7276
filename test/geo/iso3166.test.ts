import { describe, expect, it } from 'vitest';

import { countryName, isCountryCode, normalizeCountry, normalizeSubdivision, parseCountry, subdivisionName } from '../../src/geo/index.js';

describe('normalizeCountry', () => {
  it('upper-cases ISO 3166-1 alpha-2 codes given in any case', () => {
    expect(normalizeCountry('us')).toBe('US');
    expect(normalizeCountry('Ca')).toBe('CA');
    expect(normalizeCountry(' mx ')).toBe('MX');
    expect(normalizeCountry('DE')).toBe('DE');
  });

  it('defaults to US when omitted', () => {
    expect(normalizeCountry()).toBe('US');
    expect(normalizeCountry(null)).toBe('US');
    expect(normalizeCountry('  ')).toBe('US');
    expect(parseCountry(undefined)).toEqual({ ok: true, country: 'US', name: 'United States of America', defaulted: true });
  });

  it('rejects codes that are not assigned alpha-2 codes', () => {
    expect(normalizeCountry('ZZ')).toBeNull();
    expect(normalizeCountry('U')).toBeNull();
    expect(normalizeCountry('XK')).toBeNull();
    expect(isCountryCode('zz')).toBe(false);
    expect(isCountryCode('pr')).toBe(true);
  });

  it('says which alpha-2 code to send for alpha-3 codes and names', () => {
    const alpha3 = parseCountry('USA');
    expect(alpha3.ok).toBe(false);
    if (!alpha3.ok) {
      expect(alpha3.reason).toBe('invalid_country');
      expect(alpha3.message).toContain('alpha-2 code US');
    }
    const name = parseCountry('Mexico');
    expect(name.ok ? '' : name.message).toContain('send MX');
    const unknown = parseCountry('Atlantis');
    expect(unknown.ok ? '' : unknown.message).toBe("country 'Atlantis' is not an ISO 3166-1 alpha-2 country code (two letters, e.g. US, CA, MX)");
  });

  it('names countries', () => {
    expect(countryName('ca')).toBe('Canada');
    expect(countryName('QQ')).toBeUndefined();
  });
});

describe('normalizeSubdivision', () => {
  it('accepts the bare code and returns the ISO 3166-2 code', () => {
    expect(normalizeSubdivision('TX', 'US')).toEqual({ ok: true, code: 'US-TX', country: 'US', name: 'Texas' });
    expect(normalizeSubdivision('tx')).toEqual({ ok: true, code: 'US-TX', country: 'US', name: 'Texas' });
    expect(normalizeSubdivision('on', 'ca')).toEqual({ ok: true, code: 'CA-ON', country: 'CA', name: 'Ontario' });
  });

  it('accepts the full code in any case', () => {
    expect(normalizeSubdivision('US-TX', 'US')).toMatchObject({ ok: true, code: 'US-TX' });
    expect(normalizeSubdivision('us-tx', 'us')).toMatchObject({ ok: true, code: 'US-TX' });
    expect(normalizeSubdivision(' MX-NLE ', 'MX')).toMatchObject({ ok: true, code: 'MX-NLE', name: 'Nuevo León' });
  });

  it('knows Mexico City as MX-CMX and maps the former MX-DIF', () => {
    expect(normalizeSubdivision('CMX', 'MX')).toMatchObject({ ok: true, code: 'MX-CMX' });
    expect(normalizeSubdivision('MX-DIF', 'MX')).toMatchObject({ ok: true, code: 'MX-CMX' });
    expect(normalizeSubdivision('DIF', 'MX')).toMatchObject({ ok: true, code: 'MX-CMX' });
  });

  it('has Puerto Rico and the other territories as US subdivisions', () => {
    expect(normalizeSubdivision('PR', 'US')).toMatchObject({ ok: true, code: 'US-PR', name: 'Puerto Rico' });
    expect(normalizeSubdivision('US-VI')).toMatchObject({ ok: true, code: 'US-VI' });
    expect(normalizeSubdivision('US-PR', 'PR')).toMatchObject({ ok: true, code: 'US-PR' });
    expect(normalizeSubdivision('PR', 'PR')).toMatchObject({ ok: true, code: 'US-PR' });
  });

  it('covers other countries too', () => {
    expect(normalizeSubdivision('BY', 'DE')).toMatchObject({ ok: true, code: 'DE-BY', name: 'Bayern' });
  });

  it('reports an unknown subdivision', () => {
    const bare = normalizeSubdivision('XX', 'US');
    expect(bare).toEqual({ ok: false, reason: 'unknown_subdivision', message: "state 'XX' is not an ISO 3166-2 subdivision of US, e.g. US-TX" });
    const full = normalizeSubdivision('US-XX', 'US');
    expect(full).toEqual({ ok: false, reason: 'unknown_subdivision', message: "state 'US-XX' is not an ISO 3166-2 subdivision code of US" });
  });

  it('reports a subdivision of another country than country', () => {
    const bare = normalizeSubdivision('ON', 'US');
    expect(bare.ok).toBe(false);
    if (!bare.ok) {
      expect(bare.reason).toBe('other_country');
      expect(bare.subdivision).toEqual({ code: 'CA-ON', country: 'CA', name: 'Ontario' });
      expect(bare.message).toBe("state 'ON' is CA-ON (Ontario), which is a subdivision of CA, but country is US: send country CA, or a subdivision of US");
    }
    const full = normalizeSubdivision('CA-ON', 'US');
    expect(full).toMatchObject({ ok: false, reason: 'other_country' });
    expect(full.ok ? '' : full.message).toBe('state CA-ON (Ontario) is a subdivision of CA, but country is US: send country CA, or a subdivision of US');
    const texasInMexico = normalizeSubdivision('US-TX', 'MX');
    expect(texasInMexico).toMatchObject({ ok: false, reason: 'other_country', subdivision: { code: 'US-TX', country: 'US' } });
  });

  it('points at the likely own-country code when a bare code belongs to a neighbour', () => {
    const result = normalizeSubdivision('NL', 'MX');
    expect(result).toMatchObject({ ok: false, reason: 'other_country', subdivision: { code: 'CA-NL' } });
    expect(result.ok ? '' : result.message).toContain('e.g. MX-NLE (Nuevo León)');
  });

  it('refuses names but says which code to send', () => {
    const result = normalizeSubdivision('Texas', 'US');
    expect(result).toMatchObject({ ok: false, reason: 'invalid_format' });
    expect(result.ok ? '' : result.message).toContain('send US-TX');
    const quebec = normalizeSubdivision('Québec', 'US');
    expect(quebec).toMatchObject({ ok: false, reason: 'invalid_format', subdivision: { code: 'CA-QC' } });
    expect(normalizeSubdivision('T-X', 'US')).toMatchObject({ ok: false, reason: 'invalid_format' });
  });

  it('reports an invalid country before looking at the state', () => {
    expect(normalizeSubdivision('TX', 'USA')).toMatchObject({ ok: false, reason: 'invalid_country' });
  });

  it('names subdivisions', () => {
    expect(subdivisionName('us-ny')).toBe('New York');
    expect(subdivisionName('US-XX')).toBeUndefined();
  });
});
