import { geoMercator, geoPath, type GeoPermissibleObjects } from 'd3-geo';
import { lazy, readDataFile } from '../geo/data-files.js';
import { loadPlaces } from '../geo/index.js';
import { html, trusted, type SafeHtml } from './html.js';
import { MAX_MAP_LABELS, anchorText, labelAnchors, placeLabels, r1 } from './map-labels.js';

export { MAX_MAP_LABELS } from './map-labels.js';

/**
 * Maps drawn on the server as inline SVG, offline: the Natural Earth admin-1 polygons the geocoder
 * ships (src/geo/data) projected with d3-geo (Web Mercator fitted to what the map shows). No tiles,
 * no script, no outside request: the page's CSP stays as it is (SVG presentation attributes are not
 * styles). Lines keep their width at any size (`vector-effect`), so the map reads at phone width.
 */

type Ring = [number, number][];
type Polygon = Ring[];
interface Shape {
  code: string;
  polygons: Polygon[];
  minLon: number;
  maxLon: number;
  minLat: number;
  maxLat: number;
}

export interface GeoPoint {
  latitude: number;
  longitude: number;
}

export interface MapPoint extends GeoPoint {
  /** The point's `<title>` (what it is, in full). */
  label: string;
  href?: string;
  /** A CSS class for the marker (e.g. `origin`, `destination`). */
  kind?: string;
  /** Written beside the marker (a place or location name); points at one spot with one name share a label. */
  name?: string;
  /** Before the name (a stop number): `1, 3. Dallas DC` for two stops at one location. */
  tag?: string;
}

export interface MapLine {
  from: GeoPoint;
  to: GeoPoint;
  label: string;
  href?: string;
  /** Stroke width in CSS pixels (kept at any zoom). */
  width?: number;
  /** A CSS class (colour): `eq-0` … `eq-7` for lanes by equipment, `route` for a load's legs. */
  kind?: string;
  /** Drawn as a bow (lanes) rather than a straight leg (a route). */
  curved?: boolean;
  /** Written at either end (area or place names); ends at one spot with one name share a label. */
  fromName?: string;
  toName?: string;
}

export interface MapOptions {
  id: string;
  title: string;
  description: string;
  points?: MapPoint[];
  lines?: MapLine[];
  width?: number;
  height?: number;
}

// Two levels of detail: polygon vertices snapped to a grid of this many degrees (and repeats dropped).
const COARSE = 0.05;
const FINE = 0.02;

function shoelace(ring: Ring): number {
  let a = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) a += (ring[j]![0] - ring[i]![0]) * (ring[j]![1] + ring[i]![1]);
  return a / 2;
}

/** Snapped to the grid; d3-geo wants exterior rings clockwise and holes anticlockwise (spherical polygons). */
function simplify(polygons: Polygon[], step: number): Polygon[] {
  const out: Polygon[] = [];
  for (const polygon of polygons) {
    const rings: Polygon = [];
    polygon.forEach((ring, i) => {
      const snapped: Ring = [];
      for (const [lon, lat] of ring) {
        const p: [number, number] = [Math.round(lon / step) * step, Math.round(lat / step) * step];
        const prev = snapped[snapped.length - 1];
        if (!prev || prev[0] !== p[0] || prev[1] !== p[1]) snapped.push(p);
      }
      if (snapped.length < 4) return;
      const area = shoelace(snapped);
      if (area === 0) return;
      // Shoelace as written is positive for clockwise rings (x = longitude, y = latitude).
      const clockwise = area > 0;
      if ((i === 0) !== clockwise) snapped.reverse();
      rings.push(snapped);
    });
    if (rings.length > 0 && polygon[0] && rings[0] && shoelace(rings[0]) > 0) out.push(rings);
  }
  return out;
}

const shapes = lazy(() => {
  const collection = JSON.parse(readDataFile('admin1-us-ca-mx.geojson')) as {
    features: { properties: { code: string }; geometry: { type: string; coordinates: unknown } }[];
  };
  const levels = { coarse: [] as Shape[], fine: [] as Shape[] };
  for (const f of collection.features) {
    const raw = (f.geometry.type === 'Polygon' ? [f.geometry.coordinates] : f.geometry.coordinates) as Polygon[];
    for (const [level, step] of [
      ['coarse', COARSE],
      ['fine', FINE],
    ] as const) {
      const polygons = simplify(raw, step);
      if (polygons.length === 0) continue;
      let minLon = 180,
        maxLon = -180,
        minLat = 90,
        maxLat = -90;
      for (const p of polygons)
        for (const [lon, lat] of p[0]!) {
          minLon = Math.min(minLon, lon);
          maxLon = Math.max(maxLon, lon);
          minLat = Math.min(minLat, lat);
          maxLat = Math.max(maxLat, lat);
        }
      levels[level].push({ code: f.properties.code, polygons, minLon, maxLon, minLat, maxLat });
    }
  }
  return levels;
});

/** Loads and simplifies the polygons, and the places index maps and pages name places by, now (boot) rather than on the first page. */
export function warmMaps(): void {
  shapes();
  loadPlaces();
}

// Labels: at most this many per map (a map of hundreds of locations names them in each point's title).
/** A d3 path context that writes whole-pixel tenths and drops points that land on the previous one. */
class PathWriter {
  private parts: string[] = [];
  private lastX = NaN;
  private lastY = NaN;
  moveTo(x: number, y: number) {
    this.lastX = Math.round(x * 10) / 10;
    this.lastY = Math.round(y * 10) / 10;
    this.parts.push(`M${this.lastX} ${this.lastY}`);
  }
  lineTo(x: number, y: number) {
    const rx = Math.round(x * 10) / 10;
    const ry = Math.round(y * 10) / 10;
    if (Math.abs(rx - this.lastX) < 1.2 && Math.abs(ry - this.lastY) < 1.2) return;
    this.lastX = rx;
    this.lastY = ry;
    this.parts.push(`L${rx} ${ry}`);
  }
  closePath() {
    this.parts.push('Z');
  }
  arc() {}
  text() {
    return this.parts.join('');
  }
}

// The projected land of recent views (an organization's maps show the same views again and again).
const LAND_CACHE_SIZE = 64;
const landCache = new Map<string, string>();

/** The projection that fits what the map shows (its points and lines, or the contiguous US when empty) into its frame. */
function fitProjection(points: MapPoint[], lines: MapLine[], width: number, height: number) {
  const pad = 28;
  const coords: [number, number][] = [
    ...points.map((p) => [p.longitude, p.latitude] as [number, number]),
    ...lines.flatMap(
      (l) =>
        [
          [l.from.longitude, l.from.latitude],
          [l.to.longitude, l.to.latitude],
        ] as [number, number][],
    ),
  ];
  if (coords.length === 0) coords.push([-125, 24], [-66, 50]);
  // A map of one place (or a few close ones) still shows a region around it: at least 3° by 2°.
  let minLon = Math.min(...coords.map((c) => c[0])),
    maxLon = Math.max(...coords.map((c) => c[0]));
  let minLat = Math.min(...coords.map((c) => c[1])),
    maxLat = Math.max(...coords.map((c) => c[1]));
  if (maxLon - minLon < 4) [minLon, maxLon] = [(minLon + maxLon) / 2 - 2, (minLon + maxLon) / 2 + 2];
  if (maxLat - minLat < 3) [minLat, maxLat] = [(minLat + maxLat) / 2 - 1.5, (minLat + maxLat) / 2 + 1.5];
  // A margin of a tenth on each side, so end points do not sit on the frame.
  const mLon = (maxLon - minLon) * 0.1,
    mLat = (maxLat - minLat) * 0.1;
  [minLon, maxLon, minLat, maxLat] = [minLon - mLon, maxLon + mLon, Math.max(-80, minLat - mLat), Math.min(84, maxLat + mLat)];
  const frame: GeoPermissibleObjects = {
    type: 'MultiPoint',
    coordinates: [
      [minLon, minLat],
      [maxLon, maxLat],
      [minLon, maxLat],
      [maxLon, minLat],
    ],
  };
  const projection = geoMercator()
    .fitExtent(
      [
        [pad, pad],
        [width - pad, height - pad],
      ],
      frame,
    )
    .clipExtent([
      [0, 0],
      [width, height],
    ])
    .precision(0);
  return projection;
}

/** The land of the projected view as one path, from the cache of recent views when it is there. */
function landPath(projection: ReturnType<typeof fitProjection>, width: number, height: number): string {
  const topLeft = projection.invert!([0, 0])!;
  const bottomRight = projection.invert!([width, height])!;
  const view = { minLon: topLeft[0], maxLon: bottomRight[0], minLat: bottomRight[1], maxLat: topLeft[1] };
  const degreesPerPixel = (view.maxLon - view.minLon) / width;
  const level = degreesPerPixel > 0.05 ? shapes().coarse : shapes().fine;
  const cacheKey = `${width}x${height}|${projection.scale().toFixed(3)}|${projection
    .translate()
    .map((v) => v.toFixed(1))
    .join(',')}`;
  let land = landCache.get(cacheKey);
  if (land === undefined) {
    const writer = new PathWriter();
    const path = geoPath(projection, writer as never);
    for (const s of level) {
      if (s.maxLon < view.minLon || s.minLon > view.maxLon || s.maxLat < view.minLat || s.minLat > view.maxLat) continue;
      path({ type: 'MultiPolygon', coordinates: s.polygons });
    }
    land = writer.text();
    if (landCache.size >= LAND_CACHE_SIZE) landCache.delete(landCache.keys().next().value!);
  }
  // Most recently used last (a Map keeps insertion order): the oldest view goes first.
  landCache.delete(cacheKey);
  landCache.set(cacheKey, land);
  return land;
}

type Project = (p: GeoPoint) => [number, number];

const linkOr = (href: string | undefined, inner: SafeHtml) => (href ? html`<a href="${href}">${inner}</a>` : inner);

function lineMarkup(lines: MapLine[], xy: Project): SafeHtml[] {
  return lines.map((l) => {
    const [x1, y1] = xy(l.from);
    const [x2, y2] = xy(l.to);
    let d = `M${r1(x1)} ${r1(y1)} L${r1(x2)} ${r1(y2)}`;
    if (l.curved) {
      // A bow to the left of the direction of travel, so A→B and B→A are two lanes, not one line.
      const mx = (x1 + x2) / 2,
        my = (y1 + y2) / 2;
      const cx = mx + (y2 - y1) * 0.18,
        cy = my - (x2 - x1) * 0.18;
      d = `M${r1(x1)} ${r1(y1)} Q${r1(cx)} ${r1(cy)} ${r1(x2)} ${r1(y2)}`;
    }
    return linkOr(
      l.href,
      html`<path class="line ${l.kind ?? 'route'}" d="${d}" stroke-width="${String(l.width ?? 2)}" vector-effect="non-scaling-stroke" data-line><title>${l.label}</title></path>`,
    );
  });
}

function pointMarkup(points: MapPoint[], xy: Project): SafeHtml[] {
  return points.map((p) => {
    const [x, y] = xy(p);
    return linkOr(
      p.href,
      html`<circle class="point ${p.kind ?? ''}" cx="${String(r1(x))}" cy="${String(r1(y))}" r="5" data-point><title>${p.label}</title></circle>`,
    );
  });
}

export function mapSvg(o: MapOptions): SafeHtml {
  const width = o.width ?? 800;
  const height = o.height ?? 460;
  const points = o.points ?? [];
  const lines = o.lines ?? [];
  const projection = fitProjection(points, lines, width, height);
  const land = landPath(projection, width, height);
  const xy: Project = (p) => (projection([p.longitude, p.latitude]) as [number, number] | null) ?? [0, 0];
  const anchors = labelAnchors(points, lines, xy);
  const labelled = anchors.slice(0, MAX_MAP_LABELS);
  const markers = points.map((p) => {
    const [x, y] = xy(p);
    return { x1: x - 5, y1: y - 5, x2: x + 5, y2: y + 5 };
  });
  const labelMarkup = placeLabels(labelled, markers, width, height);
  // The labels are drawn text inside an image: screen readers get the places from the description.
  const placesText = labelled.length ? ` Places on the map: ${labelled.map(anchorText).join('; ')}.` : '';
  return html`<figure class="map">
<svg class="map" id="${o.id}" viewBox="0 0 ${String(width)} ${String(height)}" role="img" aria-labelledby="${o.id}-title ${o.id}-desc" preserveAspectRatio="xMidYMid meet">
<title id="${o.id}-title">${o.title}</title>
<desc id="${o.id}-desc">${o.description}${placesText}</desc>
<rect class="sea" x="0" y="0" width="${String(width)}" height="${String(height)}"></rect>
<path class="land" d="${land}"></path>
<g class="lines">${lineMarkup(lines, xy)}</g>
<g class="points">${pointMarkup(points, xy)}</g>
${labelMarkup.length ? html`<g class="labels" aria-hidden="true">${labelMarkup}</g>` : ''}
</svg>
<figcaption class="muted">${o.description} ${trusted('Map: Natural Earth (public domain).')}</figcaption>
</figure>`;
}
