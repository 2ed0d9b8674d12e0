// Charts for the live-experiment panels, on the vendored uPlot 1.6.32. Colours come from
// site.css's custom properties (read with getComputedStyle, so dark mode works, and the
// chart is redrawn when the colour scheme changes); the chart fills its container's
// width and follows window resizes; the container has role="img" and an aria-label
// summarising what it shows (the table beside it carries the numbers). uPlot's own
// legend and cursor are off: each panel draws a static legend (panel-view.js legend()).

import uPlot from '../../vendor/uplot/uPlot.esm.js';

const TONE_VARS = {
  accent: '--accent',
  note: '--note-border',
  warn: '--warn-border',
  focus: '--focus',
  muted: '--muted',
  fg: '--fg',
  border: '--border',
  panel: '--panel',
  bg: '--bg',
};

const FALLBACK = { accent: '#0b5cad', note: '#2f7d32', warn: '#c77700', focus: '#c2410c', muted: '#5a5f66', fg: '#1d1f21', border: '#d9dcdf', panel: '#ffffff', bg: '#fbfbfa' };

/** The site's palette as concrete colours, for canvas drawing. */
export function themeColors() {
  const style = getComputedStyle(document.documentElement);
  const colors = {};
  for (const [tone, name] of Object.entries(TONE_VARS)) {
    colors[tone] = style.getPropertyValue(name).trim() || FALLBACK[tone];
  }
  return colors;
}

const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const LABEL_FONT = `600 ${FONT}`;

/** Axis options in the site's colours; `extra` overrides (label, values, incrs, scale…). */
export function axis(colors, extra = {}) {
  return {
    stroke: colors.fg,
    font: FONT,
    labelFont: LABEL_FONT,
    grid: { stroke: colors.border, width: 1 },
    ticks: { stroke: colors.border, width: 1, size: 4 },
    labelSize: 20,
    labelGap: 2,
    ...extra,
  };
}

/** The bottom axis: a little tighter than uPlot's default, so the label sits close. */
export function xAxis(colors, extra = {}) {
  return axis(colors, { size: 34, ...extra });
}

/** A line series with point markers; `dash` for the second memory kind or a reference. */
export function lineSeries(colors, { label, tone, dash = false, width = 2, points = true }) {
  return {
    label,
    stroke: colors[tone],
    width,
    dash: dash ? [6, 4] : undefined,
    spanGaps: false,
    points: points ? { show: true, size: 7, width: 2, stroke: colors[tone], fill: colors.panel } : { show: false },
  };
}

/** A colour at a fifth of its opacity, for spread bands (hex or rgb() input). */
export function bandFill(color) {
  if (/^#[0-9a-f]{6}$/i.test(color)) return `${color}33`;
  const rgb = /^rgb\((.+)\)$/.exec(color);
  return rgb ? `rgba(${rgb[1]}, 0.2)` : color;
}

/** An invisible series: one edge of a band drawn with uPlot's `bands`. */
export function bandEdge(label) {
  return { label, stroke: 'transparent', width: 0, points: { show: false } };
}

/** A flat reference line (a theoretical peak, chance loss): no markers, thin, dotted. */
export function referenceSeries(colors, label, tone = 'muted') {
  return { label, stroke: colors[tone], width: 1.5, dash: [2, 4], points: { show: false } };
}

/**
 * Mounts a chart into `host` (replacing its content). `build(colors, width)` returns
 * {opts, data} for uPlot; `summary` becomes the aria-label. Returns {element, destroy}.
 */
export function mountChart(host, { summary, build, height = (width) => Math.round(Math.min(300, Math.max(200, width * 0.55))) }) {
  const frame = document.createElement('div');
  frame.className = 'exp-chart';
  frame.setAttribute('role', 'img');
  frame.setAttribute('aria-label', summary);
  host.append(frame);
  let plot = null;
  const width = () => Math.max(220, Math.floor(frame.clientWidth || host.clientWidth || 600));
  const render = () => {
    if (plot) plot.destroy();
    const w = width();
    const { opts, data } = build(themeColors(), w);
    plot = new uPlot({
      width: w,
      height: height(w),
      legend: { show: false },
      cursor: { show: false },
      ...opts,
    }, data, frame);
  };
  let pending = false;
  const onResize = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (!plot) return;
      const w = width();
      if (w !== plot.width) plot.setSize({ width: w, height: height(w) });
    });
  };
  const scheme = window.matchMedia('(prefers-color-scheme: dark)');
  window.addEventListener('resize', onResize);
  scheme.addEventListener('change', render);
  render();
  return {
    element: frame,
    destroy() {
      window.removeEventListener('resize', onResize);
      scheme.removeEventListener('change', render);
      if (plot) plot.destroy();
      plot = null;
      frame.remove();
    },
  };
}

/** Tick labels for an axis whose values are log2 of a quantity: 2^v formatted. */
export function log2Values(format) {
  return (_u, splits) => splits.map((v) => (Number.isInteger(v) ? format(2 ** v) : ''));
}
