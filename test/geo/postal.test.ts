import { describe, expect, it } from 'vitest';

import { geocodePostal, geocodePostalInState, postalStateMismatch, type PostalGeocode } from '../../src/geo/index.js';

function geocoded(postalCode: string, country?: string): PostalGeocode {
  const result = geocodePostal(postalCode, country);
  if (!result.ok) throw new Error(`expected ${postalCode} to geocode: ${result.message}`);
  return result.geocode;
}

describe('geocodePostal, US ZIP codes', () => {
  it('geocodes a five-digit ZIP to its centre, state and place', () => {
    expect(geocoded('75201', 'US')).toEqual({
      postalCode: '75201',
      precision: 'zip',
      latitude: 32.7904,
      longitude: -96.8044,
      state: 'US-TX',
      country: 'US',
      city: 'Dallas',
    });
  });

  it('defaults to US and accepts any case of the country', () => {
    expect(geocoded('60601').state).toBe('US-IL');
    expect(geocoded('10001', 'us')).toMatchObject({ state: 'US-NY', city: 'New York' });
  });

  it('accepts ZIP+4 with a hyphen, a space or nothing between', () => {
    for (const zip of ['75201-1234', '75201 1234', '752011234', ' 75201-1234 ']) {
      expect(geocoded(zip)).toMatchObject({ postalCode: '75201', state: 'US-TX' });
    }
  });

  it('includes Puerto Rico as US-PR and the other territories', () => {
    expect(geocoded('00901')).toMatchObject({ state: 'US-PR', country: 'US', city: 'San Juan', latitude: 18.4, longitude: -66.06 });
    expect(geocoded('00601', 'US')).toMatchObject({ state: 'US-PR', city: 'Adjuntas' });
    expect(geocoded('00901', 'PR')).toMatchObject({ state: 'US-PR' });
    expect(geocoded('00802')).toMatchObject({ state: 'US-VI' });
    expect(geocoded('96910')).toMatchObject({ state: 'US-GU' });
  });

  it('geocodes Alaska, Hawaii and DC', () => {
    expect(geocoded('99501')).toMatchObject({ state: 'US-AK', city: 'Anchorage' });
    expect(geocoded('96813')).toMatchObject({ state: 'US-HI', city: 'Honolulu' });
    expect(geocoded('20001')).toMatchObject({ state: 'US-DC' });
  });

  it('reports an unknown ZIP code', () => {
    expect(geocodePostal('00000', 'US')).toEqual({
      ok: false,
      reason: 'unknown_postal_code',
      message: 'postal code 00000 is not a known US ZIP code: check it, or send latitude and longitude',
    });
  });

  it('reports military APO/FPO ZIP codes as having no place', () => {
    expect(geocodePostal('09001')).toMatchObject({ ok: false, reason: 'military_postal_code' });
    expect(geocodePostal('96201')).toMatchObject({ ok: false, reason: 'military_postal_code' });
  });

  it('says what a malformed ZIP code should look like', () => {
    expect(geocodePostal('7520', 'US')).toEqual({
      ok: false,
      reason: 'invalid_format',
      message: "postal code '7520' is not a US ZIP code: expected five digits, or ZIP+4 such as 75201-1234 (a leading zero may have been dropped)",
    });
    expect(geocodePostal('ABCDE')).toMatchObject({ ok: false, reason: 'invalid_format' });
    expect(geocodePostal('')).toEqual({ ok: false, reason: 'invalid_format', message: 'postal code is empty' });
  });

  it('recognises a Canadian postal code sent with country US', () => {
    const result = geocodePostal('M5V 2T6', 'US');
    expect(result).toMatchObject({ ok: false, reason: 'invalid_format' });
    expect(result.ok ? '' : result.message).toContain('send country CA');
  });
});

describe('geocodePostal, Canadian postal codes', () => {
  it('geocodes by the forward sortation area (first three characters)', () => {
    expect(geocoded('M5V 2T6', 'CA')).toMatchObject({
      postalCode: 'M5V',
      precision: 'fsa',
      latitude: 43.6525,
      longitude: -79.3686,
      state: 'CA-ON',
      country: 'CA',
    });
  });

  it('accepts any case and spacing, and the FSA alone', () => {
    for (const code of ['m5v2t6', 'M5V2T6', ' m5v  2t6 ', 'M5V-2T6', 'M5V', 'm5v']) {
      expect(geocoded(code, 'ca')).toMatchObject({ postalCode: 'M5V', state: 'CA-ON' });
    }
  });

  it('knows every province by its FSAs', () => {
    expect(geocoded('H2X 1Y4', 'CA').state).toBe('CA-QC');
    expect(geocoded('V6B 1A1', 'CA').state).toBe('CA-BC');
    expect(geocoded('T2P 1J9', 'CA').state).toBe('CA-AB');
    expect(geocoded('R3C 4T3', 'CA').state).toBe('CA-MB');
    expect(geocoded('S4P 3Y2', 'CA').state).toBe('CA-SK');
    expect(geocoded('B3H 4R2', 'CA').state).toBe('CA-NS');
    expect(geocoded('E1C 4M3', 'CA').state).toBe('CA-NB');
    expect(geocoded('C1A 4P3', 'CA').state).toBe('CA-PE');
    expect(geocoded('A1C 5M2', 'CA').state).toBe('CA-NL');
    expect(geocoded('Y1A 1B1', 'CA').state).toBe('CA-YT');
    expect(geocoded('X1A 2L9', 'CA').state).toBe('CA-NT');
    expect(geocoded('X0A 0H0', 'CA').state).toBe('CA-NU');
  });

  it('has the rows repaired from a broken source table in the right province', () => {
    expect(geocoded('K0H 1G0', 'CA')).toMatchObject({ state: 'CA-ON', latitude: 44.77, longitude: -76.69 });
    expect(geocoded('E2E 1A1', 'CA').state).toBe('CA-NB');
  });

  it('reports an unknown FSA and a malformed code', () => {
    expect(geocodePostal('Z9Z 9Z9', 'CA')).toMatchObject({ ok: false, reason: 'unknown_postal_code' });
    expect(geocodePostal('H0H 0H0', 'CA')).toMatchObject({ ok: false, reason: 'unknown_postal_code' });
    expect(geocodePostal('M5V 2T', 'CA')).toMatchObject({ ok: false, reason: 'invalid_format' });
    const zip = geocodePostal('75201', 'CA');
    expect(zip.ok ? '' : zip.message).toContain('send country US');
  });
});

describe('geocodePostal, other countries', () => {
  it('says Mexican postal codes need coordinates', () => {
    expect(geocodePostal('06600', 'MX')).toEqual({
      ok: false,
      reason: 'not_available_offline',
      message: 'Mexican postal codes are not available offline: send latitude and longitude',
    });
    expect(geocodePostal('64000', 'mx')).toMatchObject({ ok: false, reason: 'not_available_offline' });
  });

  it('says other countries are not covered', () => {
    const result = geocodePostal('10115', 'DE');
    expect(result).toMatchObject({ ok: false, reason: 'not_available_offline' });
    expect(result.ok ? '' : result.message).toBe('postal codes of DE (Germany) are not available offline, only US and CA: send latitude and longitude');
  });

  it('reports an invalid country', () => {
    expect(geocodePostal('75201', 'USA')).toMatchObject({ ok: false, reason: 'invalid_country' });
  });
});

describe('postal code and state', () => {
  it('agrees when the postal code lies in the state', () => {
    expect(postalStateMismatch(geocoded('75201'), 'US-TX')).toBeNull();
    expect(postalStateMismatch(geocoded('75201'), 'us-tx')).toBeNull();
    expect(geocodePostalInState('M5V 2T6', 'CA-ON', 'CA')).toMatchObject({ ok: true, geocode: { state: 'CA-ON' } });
    expect(geocodePostalInState('00901', 'US-PR', 'US')).toMatchObject({ ok: true });
  });

  it('reports a postal code of another subdivision, naming both', () => {
    expect(geocodePostalInState('73301', 'US-OK')).toEqual({
      ok: false,
      reason: 'state_mismatch',
      message: 'ZIP code 73301 is in US-TX (Texas), not in US-OK: correct the state or the postal code',
    });
    expect(geocodePostalInState('H2X 1Y4', 'CA-ON', 'CA')).toEqual({
      ok: false,
      reason: 'state_mismatch',
      message: 'postal code area H2X is in CA-QC (Quebec), not in CA-ON: correct the state or the postal code',
    });
  });

  it('passes other failures through', () => {
    expect(geocodePostalInState('06600', 'MX-CMX', 'MX')).toMatchObject({ ok: false, reason: 'not_available_offline' });
  });
});
