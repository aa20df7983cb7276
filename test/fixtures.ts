import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import type { Tenant } from './helpers.js';

// Fixtures several test files share.

/** A tenant's freight basics through the API: customer CUST-1, carrier CAR-1, locations DAL and HOU. */
export async function seedFreight(a: Tenant): Promise<void> {
  for (const [url, body] of [
    ['/v2/tms-api/customers', { external_reference_id: 'CUST-1', name: 'Acme Foods' }],
    ['/v2/tms-api/carriers', { external_reference_id: 'CAR-1', name: 'Swift Transport' }],
    ['/v2/tms-api/locations', { external_reference_id: 'DAL', name: 'Dallas DC', postal_code: '75201', state: 'TX' }],
    ['/v2/tms-api/locations', { external_reference_id: 'HOU', name: 'Houston Port', postal_code: '77002', state: 'TX' }],
  ] as const) {
    const res = await a.post(url, body);
    expect(res.statusCode, res.body).toBe(201);
  }
}

/** A load from DAL to HOU for CUST-1 (seedFreight), with `extra` fields on top. */
export function dallasToHouston(ref: string, extra: Record<string, unknown> = {}) {
  return {
    external_reference_id: ref,
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'CUST-1',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00.000Z', late_arrival: '2026-03-02T10:00:00.000Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T08:00:00.000Z', late_arrival: '2026-03-03T12:00:00.000Z' },
    ],
    ...extra,
  };
}

/** Deletes every Redis key under `prefix` (a test run's rate-limit counters). */
export async function cleanRedis(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A port nothing listens on (the OS picks it, then it is released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Miles in one degree of latitude (the earth's mean radius, 3,958.7613 miles). */
export const MILES_PER_DEGREE = (2 * Math.PI * 3958.7613) / 360;
/** Dallas and Houston (both America/Chicago): the lane the lane and recommendation tests work out by hand. */
export const DALLAS = { latitude: 32.7767, longitude: -96.797 };
export const HOUSTON = { latitude: 29.7604, longitude: -95.3698 };
/** The point `miles` due north of `p` (so the distance to it is exactly the offset). */
export const north = (p: { latitude: number; longitude: number }, miles: number) => ({
  latitude: p.latitude + miles / MILES_PER_DEGREE,
  longitude: p.longitude,
});
