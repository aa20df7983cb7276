import { html, type SafeHtml } from './html.js';

/** The names written on a map (map.ts): which places get one, and where each goes so that none overlaps another. */

export const MAX_MAP_LABELS = 40;
const LABEL_FONT = 13;
const LABEL_MAX_CHARS = 32;
// A rough advance width per character of the sans-serif stylesheet font at LABEL_FONT (wide enough for capitals).
const CHAR_WIDTH = LABEL_FONT * 0.6;

export interface LabelAnchor {
  x: number;
  y: number;
  /** Marker radius: the label starts beyond it. */
  r: number;
  name: string;
  tags: string[];
  /** A line end without a point marker gets a small dot. */
  dot: boolean;
}

export interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** `1, 3. Dallas DC`: the anchor's tags (stop numbers) and name. */
export const anchorText = (a: LabelAnchor) => `${a.tags.length ? `${a.tags.join(', ')}. ` : ''}${a.name}`;

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

/** Rounded to a tenth of a pixel, as the map's markup writes coordinates. */
export const r1 = (v: number) => Math.round(v * 10) / 10;

/**
 * Places each anchor's label (greedy, in the anchors' order: the caller puts the important ones
 * first) at the first spot that stays inside the map and clear of every marker and label placed so
 * far; one that fits nowhere is left out (its place is still in the marker's title and the map's
 * description).
 */
export function placeLabels(anchors: LabelAnchor[], markers: Box[], width: number, height: number): SafeHtml[] {
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

/** The places to name: named points first (in order), then named line ends; one label per spot (to the pixel) and name. */
export function labelAnchors(
  points: readonly { name?: string; tag?: string; latitude: number; longitude: number }[],
  lines: readonly { from: { latitude: number; longitude: number }; to: { latitude: number; longitude: number }; fromName?: string; toName?: string }[],
  xy: (g: { latitude: number; longitude: number }) => [number, number],
): LabelAnchor[] {
  const anchors: LabelAnchor[] = [];
  const anchorAt = new Map<string, LabelAnchor>();
  const addAnchor = (g: { latitude: number; longitude: number }, name: string | undefined, tag: string | undefined, r: number, dot: boolean) => {
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
  return anchors;
}
