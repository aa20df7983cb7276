// Minimal types for which-polygon 2.x (the package ships none).
declare module 'which-polygon' {
  function whichPolygon<P>(data: whichPolygon.FeatureCollection<P>): whichPolygon.PolygonQuery<P>;
  namespace whichPolygon {
    type Position = [number, number];
    interface FeatureCollection<P> {
      type: 'FeatureCollection';
      features: Array<{
        type: 'Feature';
        properties: P;
        geometry: { type: 'Polygon'; coordinates: Position[][] } | { type: 'MultiPolygon'; coordinates: Position[][][] } | null;
      }>;
    }
    interface PolygonQuery<P> {
      /** Properties of the first polygon containing [longitude, latitude], or null. */
      (point: Position): P | null;
      /** Properties of every polygon containing the point, or null when none. */
      (point: Position, multi: true): P[] | null;
      /** Properties of every polygon meeting [minLon, minLat, maxLon, maxLat]. */
      bbox(box: [number, number, number, number]): P[];
    }
  }
  export = whichPolygon;
}
