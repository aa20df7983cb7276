export interface Coordinates {
  latitude: number;
  longitude: number;
}

/** Mean Earth radius (IUGG) in statute miles. */
export const EARTH_RADIUS_MILES = 3958.7613;

const toRadians = (degrees: number): number => (degrees * Math.PI) / 180;

/** Great-circle distance in statute miles (haversine; within 0.5% of the ellipsoidal distance). */
export function haversineMiles(a: Coordinates, b: Coordinates): number {
  const dLat = toRadians(b.latitude - a.latitude);
  const dLon = toRadians(b.longitude - a.longitude);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(toRadians(a.latitude)) * Math.cos(toRadians(b.latitude)) * Math.sin(dLon / 2) ** 2;
  // min() keeps rounding from pushing h past 1 for antipodal points.
  return 2 * EARTH_RADIUS_MILES * Math.asin(Math.min(1, Math.sqrt(h)));
}
