import { geoMercator, geoPath, type GeoPermissibleObjects } from 'd3-geo';
import { lazy, readDataFile } from '../geo/data-files.js';
import { loadPlaces } from '../geo/index.js';
import { html, trusted, type SafeHtml } from './html.js';

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
export const MAX_MAP_LABELS = 40;
const LABEL_FONT = 13;
const LABEL_MAX_CHARS = 32;
// A rough advance width per character of the sans-serif stylesheet font at LABEL_FONT (wide enough for capitals).
const CHAR_WIDTH = LABEL_FONT * 0.6;

interface LabelAnchor {
  x: number;
  y: number;
  /** Marker radius: the label starts beyond it. */
  r: number;
  name: string;
  tags: string[];
  /** A line end without a point marker gets a small dot. */
  dot: boolean;
}

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** `1, 3. Dallas DC`: the anchor's tags (stop numbers) and name. */
const anchorText = (a: LabelAnchor) => `${a.tags.length ? `${a.tags.join(', ')}. ` : ''}${a.name}`;

const overlaps = (a: Box, b: Box) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;

/** Candidate spots around an anchor, best first: right, left, above, below, the corners; then the same a step further out, with a leader. */
const SPOTS: [number, number][] = [
  [1, 0],
  [-1, 0],
  [0, -1],
  [0, 1],
  [1, -1],
  [1, 1],
  [-1, -1],
  [-1, 1],
];

/**
 * Places each anchor's label (greedy, in the anchors' order: the caller puts the important ones
 * first) at the first spot that stays inside the map and clear of every marker and label placed so
 * far; one that fits nowhere is left out (its place is still in the marker's title and the map's
 * description).
 */
function placeLabels(anchors: LabelAnchor[], markers: Box[], width: number, height: number): SafeHtml[] {
  const taken: Box[] = [...markers, ...anchors.map((a) => ({ x1: a.x - a.r, y1: a.y - a.r, x2: a.x + a.r, y2: a.y + a.r }))];
  const out: SafeHtml[] = [];
  for (const a of anchors) {
    const full = anchorText(a);
    const text = full.length > LABEL_MAX_CHARS ? `${full.slice(0, LABEL_MAX_CHARS - 1)}…` : full;
    const w = text.length * CHAR_WIDTH + 4;
    const h = LABEL_FONT + 2;
    let placed: { box: Box; x: number; y: number; anchor: 'start' | 'middle' | 'end'; leader: boolean } | null = null;
    for (const step of [1, 2.6]) {
      for (const [dx, dy] of SPOTS) {
        const gap = (a.r + 3) * step;
        const cx = a.x + dx * gap;
        const cy = a.y + dy * gap;
        const x1 = dx > 0 ? cx : dx < 0 ? cx - w : cx - w / 2;
        const y1 = dy > 0 ? cy : dy < 0 ? cy - h : cy - h / 2;
        const box = { x1, y1, x2: x1 + w, y2: y1 + h };
        if (box.x1 < 2 || box.y1 < 2 || box.x2 > width - 2 || box.y2 > height - 2) continue;
        if (taken.some((t) => overlaps(t, box))) continue;
        placed = {
          box,
          x: dx > 0 ? x1 + 2 : dx < 0 ? x1 + w - 2 : x1 + w / 2,
          y: y1 + h - 4,
          anchor: dx > 0 ? 'start' : dx < 0 ? 'end' : 'middle',
          leader: step > 1,
        };
        break;
      }
      if (placed) break;
    }
    if (!placed) continue;
    taken.push(placed.box);
    const leader = placed.leader
      ? html`<line class="leader" x1="${String(r1(a.x))}" y1="${String(r1(a.y))}" x2="${String(r1(Math.min(Math.max(a.x, placed.box.x1), placed.box.x2)))}" y2="${String(r1(Math.min(Math.max(a.y, placed.box.y1), placed.box.y2)))}"></line>`
      : '';
    out.push(
      html`${leader}${a.dot ? html`<circle class="end" cx="${String(r1(a.x))}" cy="${String(r1(a.y))}" r="3"></circle>` : ''}<text class="map-label" x="${String(r1(placed.x))}" y="${String(r1(placed.y))}" text-anchor="${placed.anchor}">${text}</text>`,
    );
  }
  return out;
}

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

const r1 = (v: number) => Math.round(v * 10) / 10;

export function mapSvg(o: MapOptions): SafeHtml {
  const width = o.width ?? 800;
  const height = o.height ?? 460;
  const pad = 28;
  const points = o.points ?? [];
  const lines = o.lines ?? [];
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
  const xy = (p: GeoPoint) => projection([p.longitude, p.latitude]) ?? [0, 0];
  const linkOr = (href: string | undefined, inner: SafeHtml) => (href ? html`<a href="${href}">${inner}</a>` : inner);
  const lineMarkup = lines.map((l) => {
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
  const pointMarkup = points.map((p) => {
    const [x, y] = xy(p);
    return linkOr(
      p.href,
      html`<circle class="point ${p.kind ?? ''}" cx="${String(r1(x))}" cy="${String(r1(y))}" r="5" data-point><title>${p.label}</title></circle>`,
    );
  });
  // Named points first (in order), then named line ends; one label per spot (to the pixel) and name.
  const anchors: LabelAnchor[] = [];
  const anchorAt = new Map<string, LabelAnchor>();
  const addAnchor = (g: GeoPoint, name: string | undefined, tag: string | undefined, r: number, dot: boolean) => {
    if (!name) return;
    const [x, y] = xy(g);
    const key = `${Math.round(x)},${Math.round(y)}|${name}`;
    const had = anchorAt.get(key);
    if (had) {
      if (tag && !had.tags.includes(tag)) had.tags.push(tag);
      return;
    }
    const a = { x, y, r, name, tags: tag ? [tag] : [], dot };
    anchorAt.set(key, a);
    anchors.push(a);
  };
  for (const p of points) addAnchor(p, p.name, p.tag, 5, false);
  for (const l of lines) {
    addAnchor(l.from, l.fromName, undefined, 3, true);
    addAnchor(l.to, l.toName, undefined, 3, true);
  }
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
<g class="lines">${lineMarkup}</g>
<g class="points">${pointMarkup}</g>
${labelMarkup.length ? html`<g class="labels" aria-hidden="true">${labelMarkup}</g>` : ''}
</svg>
<figcaption class="muted">${o.description} ${trusted('Map: Natural Earth (public domain).')}</figcaption>
</figure>`;
}
