import { createHash } from 'node:crypto';

/**
 * The dashboard's only stylesheet and script, served by the process itself (no CDN, no build step).
 * The Content-Security-Policy allows styles and scripts from this origin only, so there is no inline
 * `<style>`, `<script>` or `style=` anywhere in the pages.
 */
const CSS = `
:root {
  --ink: #1b2430; --muted: #4f5b69; --line: #cfd6df; --bg: #f4f6f9; --card: #ffffff;
  --brand: #12355b; --brand-ink: #ffffff; --link: #0b57a3; --focus: #f2a900;
  --ok: #1d6b3a; --ok-bg: #e6f4ea; --warn: #7a4b00; --warn-bg: #fff4d6; --bad: #a1251b; --bad-bg: #fde8e6;
}
* { box-sizing: border-box; }
html { font-size: 100%; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 1rem; line-height: 1.5; color: var(--ink); background: var(--bg); }
a { color: var(--link); }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip-link { position: absolute; left: -9999px; top: 0; background: var(--card); padding: .5rem 1rem; z-index: 10; }
.skip-link:focus { left: .5rem; top: .5rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
header.site { background: var(--brand); color: var(--brand-ink); }
header.site .bar { max-width: 90rem; margin: 0 auto; padding: .6rem 1.25rem; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; }
header.site .brand { font-weight: 700; font-size: 1.15rem; color: var(--brand-ink); text-decoration: none; margin-right: auto; }
header.site .who { font-size: .9rem; }
header.site form { display: inline; margin: 0; }
nav.main { background: #1c4a7a; }
nav.main ul { max-width: 90rem; margin: 0 auto; padding: 0 1.25rem; list-style: none; display: flex; flex-wrap: wrap; gap: 0 .25rem; }
nav.main a { display: block; padding: .55rem .8rem; color: #fff; text-decoration: none; border-bottom: 3px solid transparent; }
nav.main a:hover { background: rgba(255,255,255,.1); }
nav.main a[aria-current="page"] { border-bottom-color: var(--focus); font-weight: 600; }
main { max-width: 90rem; margin: 0 auto; padding: 1.25rem; overflow-wrap: break-word; }
main.narrow { max-width: 34rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.25rem; margin: 1.75rem 0 .75rem; }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin-bottom: 1rem; }
.card > h2:first-child, .card > h3:first-child { margin-top: 0; }
nav.tabs ul { list-style: none; margin: 0 0 1rem; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem; border-bottom: 2px solid var(--line); }
nav.tabs a { display: block; padding: .45rem .9rem; text-decoration: none; border: 1px solid transparent; border-bottom: none; border-radius: 6px 6px 0 0; margin-bottom: -2px; }
nav.tabs a[aria-current="page"] { background: var(--card); border-color: var(--line); border-bottom: 2px solid var(--card); font-weight: 600; color: var(--ink); }
ul.chips { list-style: none; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: .25rem; min-width: 10rem; }
ul.chips li { background: #eef2f7; border-radius: 4px; padding: 0 .35rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); gap: 1rem; }
.stat { font-size: 1.8rem; font-weight: 700; display: block; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.25rem; margin: 0; }
dl.facts dt { font-weight: 600; color: var(--muted); }
dl.facts dd { margin: 0; min-width: 0; }
/* Positioned, so text hidden for screen readers inside a scrolled table scrolls (and is clipped) with it instead of widening the page. */
.table-wrap { position: relative; overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
caption { text-align: left; padding: .6rem .75rem; font-weight: 600; color: var(--muted); }
th, td { text-align: left; padding: .5rem .6rem; border-top: 1px solid var(--line); vertical-align: top; }
thead th { background: #e9eef4; border-top: none; vertical-align: bottom; }
tbody tr:nth-child(even) { background: #f8fafc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
/* Emails, phone numbers and URLs may break anywhere rather than widen a table. */
td.contact { overflow-wrap: anywhere; min-width: 9rem; }
th.url, td.url { overflow-wrap: anywhere; min-width: 12rem; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
pre.event-data { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; max-width: 60ch; max-height: 24em; overflow: auto; white-space: pre-wrap; word-break: break-word; margin: .5em 0 0; }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .82rem; font-weight: 600; background: #e4e9f0; color: var(--ink); white-space: nowrap; }
.badge.ok { background: var(--ok-bg); color: var(--ok); }
.badge.bad { background: var(--bad-bg); color: var(--bad); }
.badge.warn { background: var(--warn-bg); color: var(--warn); }
.notice { border-left: 5px solid var(--link); background: #e8f1fb; padding: .75rem 1rem; border-radius: 4px; margin: 0 0 1rem; }
.notice.ok { border-color: var(--ok); background: var(--ok-bg); }
.notice.warn { border-color: #c98a00; background: var(--warn-bg); }
.notice.error { border-color: var(--bad); background: var(--bad-bg); }
.notice p { margin: .25rem 0; }
form.stack { display: grid; gap: .9rem; max-width: 36rem; }
form.stack > * { min-width: 0; }
form.inline { display: flex; flex-wrap: wrap; gap: .75rem; align-items: flex-end; margin-bottom: 1rem; }
form.row-action { display: inline; margin: 0; }
label { display: block; font-weight: 600; margin-bottom: .2rem; }
.hint { display: block; font-weight: 400; color: var(--muted); font-size: .88rem; }
input[type=text], input[type=email], input[type=password], input[type=number], input[type=search], select {
  font: inherit; padding: .45rem .6rem; border: 1px solid #8a96a5; border-radius: 6px; width: 100%; background: #fff; color: var(--ink); }
input[readonly] { background: #f1f4f8; }
input[aria-invalid="true"] { border-color: var(--bad); border-width: 2px; }
.field-error { color: var(--bad); font-weight: 600; font-size: .9rem; display: block; }
fieldset { border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; margin: 0; }
legend { font-weight: 600; padding: 0 .3rem; }
.checks { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: .35rem 1rem; }
/* A checkbox keeps its size beside a long label (a flex item would shrink) and sits level with the label's first line. */
.checks label { font-weight: 400; display: flex; gap: .45rem; align-items: flex-start; margin: 0; }
.checks label > :not(input) { min-width: 0; }
.checks > label:only-child { grid-column: 1 / -1; }
.checks input { flex: none; width: 1.1rem; height: 1.1rem; margin: .2rem 0 0; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: .9rem; }
button, .button { font: inherit; font-weight: 600; padding: .5rem 1rem; border-radius: 6px; border: 1px solid var(--brand);
  background: var(--brand); color: #fff; cursor: pointer; text-decoration: none; display: inline-block; line-height: 1.3; }
button:hover, .button:hover { background: #0c2744; }
button.secondary, .button.secondary { background: #fff; color: var(--brand); }
button.secondary:hover, .button.secondary:hover { background: #eef3f9; }
button.danger { background: var(--bad); border-color: var(--bad); }
button.danger:hover { background: #7f1b13; }
button.small, .button.small { padding: .2rem .6rem; font-size: .88rem; }
header.site button { background: transparent; border-color: #fff; color: #fff; padding: .25rem .7rem; }
.actions { display: flex; flex-wrap: wrap; gap: .4rem; }
.actions.column { flex-direction: column; align-items: stretch; white-space: nowrap; }
.key-box { display: flex; gap: .5rem; align-items: stretch; flex-wrap: wrap; }
.key-box input { flex: 1 1 32rem; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
nav.pager { display: flex; gap: 1rem; align-items: center; margin: .75rem 0; }
ul.plain { list-style: none; padding: 0; margin: 0; }
.nowrap { white-space: nowrap; }
@media (max-width: 40rem) { .two { grid-template-columns: 1fr; } }
figure.map, figure.chart { margin: 0 0 1rem; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .5rem; }
figure.map figcaption { font-size: .85rem; padding: .25rem .25rem 0; }
figure.chart { max-width: 60rem; }
figure.chart figcaption { font-size: .9rem; font-weight: 600; color: var(--muted); padding: .25rem .25rem 0; }
svg.map, svg.chart { display: block; width: 100%; height: auto; }
svg.map .sea { fill: #dceaf6; }
svg.map .land { fill: #f4f1ea; stroke: #a3adb8; stroke-width: .6; }
svg.map .line { fill: none; stroke-linecap: round; opacity: .85; }
svg.map .line.route { stroke: #12355b; stroke-dasharray: 6 4; }
svg.map a:focus-visible .line, svg.map a:hover .line { opacity: 1; stroke-width: 6; }
svg.map .point { fill: #12355b; stroke: #fff; stroke-width: 1.5; }
svg.map .point.origin { fill: #1d6b3a; }
svg.map .point.destination { fill: #a1251b; }
.eq-0 { stroke: #0b57a3; fill: #0b57a3; } .eq-1 { stroke: #c2410c; fill: #c2410c; } .eq-2 { stroke: #15803d; fill: #15803d; }
.eq-3 { stroke: #7e22ce; fill: #7e22ce; } .eq-4 { stroke: #a16207; fill: #a16207; } .eq-5 { stroke: #be185d; fill: #be185d; }
.eq-6 { stroke: #0f766e; fill: #0f766e; } .eq-7 { stroke: #475569; fill: #475569; }
svg.chart .axis line { stroke: #d5dbe3; stroke-width: 1; }
svg.chart .axis text { font-size: 11px; fill: var(--muted); }
svg.chart .series { fill: none; stroke-width: 2.5; }
.s0 { fill: #0b57a3; stroke: #0b57a3; } .s1 { fill: #c2410c; stroke: #c2410c; } .s2 { fill: #a1251b; stroke: #a1251b; } .s3 { fill: #7e22ce; stroke: #7e22ce; }
svg.chart rect.bar { stroke: none; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; padding: 0 .25rem; margin: .25rem 0 0; font-size: .88rem; }
ul.legend li { display: flex; align-items: center; gap: .35rem; }
svg.swatch { width: .8rem; height: .8rem; }
ul.legend.lines svg.swatch rect { stroke: none; }
.split { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.4fr); gap: 1rem; align-items: start; }
.split > .card { margin: 0; }
.flag { color: var(--bad); font-weight: 600; }
p.empty { background: var(--card); border: 1px dashed var(--line); border-radius: 8px; padding: 1rem; }
th.sortable a { color: inherit; }
@media (max-width: 48rem) { .split { grid-template-columns: 1fr; } }
/* Map labels (issue 30): place names beside points and lane ends, with a halo so they read over lines and borders. */
svg.map .map-label { font-size: 13px; font-weight: 600; fill: #1b2430; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; paint-order: stroke; pointer-events: none; }
svg.map .leader { stroke: #5b6776; stroke-width: 1; vector-effect: non-scaling-stroke; }
svg.map .end { fill: #1b2430; stroke: #fff; stroke-width: 1; }
`;

const JS = `'use strict';
// Copy buttons: <button data-copy-target="ID" data-copy-status="ID">. Works with the keyboard (a button)
// and announces the result in a polite live region.
document.addEventListener('click', function (event) {
  var button = event.target instanceof Element ? event.target.closest('button[data-copy-target]') : null;
  if (!button) return;
  var field = document.getElementById(button.getAttribute('data-copy-target'));
  var status = document.getElementById(button.getAttribute('data-copy-status'));
  if (!field) return;
  var text = field.value !== undefined ? field.value : field.textContent;
  function done(ok) {
    if (status) status.textContent = ok ? 'Copied to the clipboard.' : 'Copy failed: select the key and copy it yourself.';
  }
  function fallback() {
    if (field.select) field.select();
    try { done(document.execCommand('copy')); } catch (e) { done(false); }
  }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
  } else {
    fallback();
  }
});
`;

function asset(body: string, type: string) {
  const version = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { body, type, version };
}

export const ASSETS = {
  '/assets/dashboard.css': asset(CSS, 'text/css; charset=utf-8'),
  '/assets/dashboard.js': asset(JS, 'text/javascript; charset=utf-8'),
} as const;

export const cssHref = `/assets/dashboard.css?v=${ASSETS['/assets/dashboard.css'].version}`;
export const jsHref = `/assets/dashboard.js?v=${ASSETS['/assets/dashboard.js'].version}`;
