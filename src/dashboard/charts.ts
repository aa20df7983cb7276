import { html, type SafeHtml } from './html.js';

/**
 * Charts as inline SVG written on the server: no chart library, no script, nothing for the CSP to
 * allow. Each chart has a title and a description for screen readers and a data table beside it
 * (the numbers stay readable without the picture). Colours come from the stylesheet (`.s0` … `.s3`).
 */

const W = 720;
const H = 220;
const LEFT = 44;
const RIGHT = 10;
const TOP = 12;
const BOTTOM = 30;
const r1 = (v: number) => String(Math.round(v * 10) / 10);

/** How a chart's values are read: counted things get whole-number ticks, measures any ticks. */
export type AxisKind = 'count' | 'measure';

export interface Axis {
  kind: AxisKind;
  /** The value at the top of the plot. */
  top: number;
  /** The values labelled on the axis, from 0 up to `top`, distinct. */
  ticks: number[];
}

/** At most this many steps between a count axis's ticks, so its labels stay apart. */
const MAX_COUNT_STEPS = 4;

/**
 * The value axis of a chart whose largest value is `max`. A count axis steps by a whole 1, 2 or 5 ×
 * a power of ten, the fewest steps up to `MAX_COUNT_STEPS` that reach `max`, so its ticks are
 * distinct whole numbers (top 1: 0, 1; top 2: 0, 1, 2; top 7: 0, 2, 4, 6, 8). A measure axis (a rate,
 * a share, money) is topped at 1, 2 or 5 × a power of ten and labelled at 0, half and the top.
 */
export function valueAxis(max: number, kind: AxisKind): Axis {
  if (kind === 'measure') {
    const top = niceMax(max);
    return { kind, top, ticks: [0, top / 2, top] };
  }
  const most = Math.max(1, Math.ceil(max));
  for (let power = 1; ; power *= 10) {
    for (const m of [1, 2, 5]) {
      const step = m * power;
      const steps = Math.ceil(most / step);
      if (steps <= MAX_COUNT_STEPS) return { kind, top: steps * step, ticks: Array.from({ length: steps + 1 }, (_, i) => i * step) };
    }
  }
}

/** A round axis top above `max`: 1, 2 or 5 × a power of ten. */
function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

/** The value axis's lines and labels; a tick whose label would repeat the next one's (a measure formatted coarsely) is left out. */
function yAxis(axis: Axis, format: (v: number) => string): SafeHtml {
  const y = (v: number) => TOP + (H - TOP - BOTTOM) * (1 - v / axis.top);
  const labels = axis.ticks.map(format);
  const shown = axis.ticks.filter((_, i) => labels[i] !== labels[i + 1]);
  return html`<g class="axis">${shown.map(
    (v) =>
      html`<line x1="${String(LEFT)}" x2="${String(W - RIGHT)}" y1="${r1(y(v))}" y2="${r1(y(v))}"></line><text x="${String(LEFT - 4)}" y="${r1(y(v) + 4)}" text-anchor="end">${format(v)}</text>`,
  )}</g>`;
}

export interface BarSeries {
  name: string;
  /** `s0` … `s3` */
  cls: string;
}

/**
 * Stacked bars: one column per label, one segment per series. `labelEvery` thins the x labels. Bars
 * count things (requests, loads) unless `axis` says otherwise.
 */
export function stackedBars(o: {
  id: string;
  title: string;
  description: string;
  labels: string[];
  series: BarSeries[];
  values: number[][];
  labelEvery?: number;
  format?: (v: number) => string;
  axis?: AxisKind;
}): SafeHtml {
  const n = o.labels.length;
  const totals = o.labels.map((_, i) => o.series.reduce((sum, _s, k) => sum + (o.values[k]?.[i] ?? 0), 0));
  const axis = valueAxis(Math.max(0, ...totals), o.axis ?? 'count');
  const top = axis.top;
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const step = n > 0 ? plotW / n : plotW;
  const barW = Math.max(1, step * 0.8);
  const every = o.labelEvery ?? Math.max(1, Math.ceil(n / 8));
  const fmt = o.format ?? ((v: number) => String(Math.round(v)));
  const bars: SafeHtml[] = [];
  for (let i = 0; i < n; i++) {
    let base = TOP + plotH;
    for (let k = 0; k < o.series.length; k++) {
      const v = o.values[k]?.[i] ?? 0;
      if (v <= 0) continue;
      const h = (v / top) * plotH;
      base -= h;
      bars.push(
        html`<rect class="bar ${o.series[k]!.cls}" x="${r1(LEFT + i * step + (step - barW) / 2)}" y="${r1(base)}" width="${r1(barW)}" height="${r1(h)}"><title>${o.labels[i]}: ${o.series[k]!.name} ${fmt(v)}</title></rect>`,
      );
    }
  }
  const xLabels = o.labels.map((l, i) =>
    i % every === 0 ? html`<text x="${r1(LEFT + i * step + step / 2)}" y="${String(H - 10)}" text-anchor="middle">${l}</text>` : '',
  );
  return html`<figure class="chart">
<svg class="chart" id="${o.id}" data-axis="${axis.kind}" viewBox="0 0 ${String(W)} ${String(H)}" role="img" aria-labelledby="${o.id}-title ${o.id}-desc">
<title id="${o.id}-title">${o.title}</title><desc id="${o.id}-desc">${o.description}</desc>
${yAxis(axis, fmt)}
<g class="bars">${bars}</g>
<g class="axis">${xLabels}</g>
</svg>
${o.series.length > 1 ? legend(o.series) : ''}
<figcaption>${o.title}</figcaption>
</figure>`;
}

export interface LineSeries extends BarSeries {
  /** Points by x position (0 … labels.length - 1); null leaves a gap. */
  values: (number | null)[];
  /** Dots only (sparse observations such as market snapshots). */
  dots?: boolean;
}

/** Lines over x positions; their values are measures (rates, shares) unless `axis` says `count`. */
export function lineChart(o: {
  id: string;
  title: string;
  description: string;
  labels: string[];
  series: LineSeries[];
  format?: (v: number) => string;
  axis?: AxisKind;
}): SafeHtml {
  const n = o.labels.length;
  const all = o.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const axis = valueAxis(Math.max(0, ...all), o.axis ?? 'measure');
  const top = axis.top;
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const x = (i: number) => LEFT + (n > 1 ? (i / (n - 1)) * plotW : plotW / 2);
  const y = (v: number) => TOP + plotH * (1 - v / top);
  const fmt = o.format ?? ((v: number) => v.toFixed(2));
  const every = Math.max(1, Math.ceil(n / 8));
  const lines = o.series.map((s) => {
    let d = '';
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${r1(x(i))} ${r1(y(v))}`;
      pen = true;
    });
    const dots = s.values.map((v, i) =>
      v === null ? '' : html`<circle class="dot ${s.cls}" cx="${r1(x(i))}" cy="${r1(y(v))}" r="3"><title>${o.labels[i]}: ${s.name} ${fmt(v)}</title></circle>`,
    );
    return html`${!s.dots && d ? html`<path class="series ${s.cls}" d="${d}"></path>` : ''}${dots}`;
  });
  const xLabels = o.labels.map((l, i) => (i % every === 0 ? html`<text x="${r1(x(i))}" y="${String(H - 10)}" text-anchor="middle">${l}</text>` : ''));
  return html`<figure class="chart">
<svg class="chart" id="${o.id}" data-axis="${axis.kind}" viewBox="0 0 ${String(W)} ${String(H)}" role="img" aria-labelledby="${o.id}-title ${o.id}-desc">
<title id="${o.id}-title">${o.title}</title><desc id="${o.id}-desc">${o.description}</desc>
${yAxis(axis, fmt)}
<g class="lines">${lines}</g>
<g class="axis">${xLabels}</g>
</svg>
${legend(o.series)}
<figcaption>${o.title}</figcaption>
</figure>`;
}

function legend(series: BarSeries[]): SafeHtml {
  return html`<ul class="legend">${series.map((s) => html`<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="bar ${s.cls}" width="10" height="10"></rect></svg>${s.name}</li>`)}</ul>`;
}
