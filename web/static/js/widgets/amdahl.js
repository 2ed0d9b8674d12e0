// Amdahl calculator (lesson 1): sliders and exact boxes for the parallel fraction p and
// the core count N, the speedup S = 1 / ((1 − p) + p / N) worked out step by step, its
// ceiling 1 / (1 − p), the curve of S against N on a log axis, and the same table the
// no-JavaScript fallback prints. The point: the serial part, not the core count, sets
// the ceiling. The arithmetic lives in logic/amdahl.js.

import { thousands } from '../logic/numbers.js';
import { el } from '../dom.js';
import {
  MAX_CORES,
  SLIDER_CORE_COUNTS,
  SLIDER_MAX_CORES,
  speedup,
  ceiling,
  formatSpeedup,
  formatCeiling,
  workedSteps,
  table,
  shareOfCeiling,
  sliderToCores,
  coresToSlider,
  curve,
  niceTop,
  plain,
  clampNumber,
} from '../logic/amdahl.js';

const SVG = 'http://www.w3.org/2000/svg';
let instances = 0;

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function label(forId, text, className) {
  const node = el('label', className, text);
  node.htmlFor = forId;
  return node;
}

/** A y-axis label short enough for the margin: 25, 2.5, 150K. */
function tickLabel(value) {
  return value.toLocaleString('en-US', { notation: 'compact', maximumSignificantDigits: 3 });
}

/** The curve of S against N (log axis), the ceiling as a dashed line, N as a dot. */
function drawChart(chart, width, p, n) {
  const height = 220;
  const margin = { left: 44, right: 14, top: 12, bottom: 38 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const top = Math.log10(SLIDER_MAX_CORES);
  const limit = ceiling(p);
  const yMax = niceTop(Number.isFinite(limit) ? limit * 1.1 : speedup(p, SLIDER_MAX_CORES) * 1.1);
  const x = (log10n) => margin.left + (Math.min(top, log10n) / top) * plotWidth;
  const y = (s) => margin.top + plotHeight - (Math.min(s, yMax) / yMax) * plotHeight;

  chart.replaceChildren();
  chart.setAttribute('viewBox', `0 0 ${width} ${height}`);
  chart.setAttribute('width', String(width));
  chart.setAttribute('height', String(height));

  const axes = svg('g', { class: 'wb-chart-axes' });
  for (let k = 0; k <= top; k += 1) {
    const tx = x(k);
    axes.append(svg('line', { x1: tx, x2: tx, y1: margin.top, y2: margin.top + plotHeight, class: 'wb-chart-grid' }));
    const tick = k <= 2 ? String(10 ** k) : `${10 ** (k - 3)}k`;
    axes.append(svg('text', { x: tx, y: height - 22, 'text-anchor': 'middle', class: 'wb-chart-label' }, tick));
  }
  for (let i = 0; i <= 5; i += 1) {
    const value = (yMax * i) / 5;
    const ty = y(value);
    axes.append(svg('line', { x1: margin.left, x2: margin.left + plotWidth, y1: ty, y2: ty, class: 'wb-chart-grid' }));
    axes.append(
      svg('text', { x: margin.left - 6, y: ty + 4, 'text-anchor': 'end', class: 'wb-chart-label' }, tickLabel(value)),
    );
  }
  axes.append(
    svg('text', { x: margin.left + plotWidth / 2, y: height - 4, 'text-anchor': 'middle', class: 'wb-chart-label' }, 'cores N (log scale)'),
  );
  chart.append(axes);

  if (Number.isFinite(limit) && limit <= yMax) {
    chart.append(svg('line', { x1: margin.left, x2: margin.left + plotWidth, y1: y(limit), y2: y(limit), class: 'wb-chart-limit' }));
    chart.append(
      svg('text', { x: margin.left + 4, y: y(limit) - 5, class: 'wb-chart-label wb-chart-limit-label' }, `ceiling ${formatCeiling(p)}`),
    );
  }
  const d = curve(p)
    .map((point, i) => `${i === 0 ? 'M' : 'L'}${x(point.x).toFixed(1)},${y(point.s).toFixed(1)}`)
    .join(' ');
  chart.append(svg('path', { d, class: 'wb-chart-curve' }));
  const s = speedup(p, n);
  chart.append(svg('circle', { cx: x(Math.log10(n)), cy: y(s), r: 5, class: 'wb-chart-dot' }));
  chart.setAttribute(
    'aria-label',
    `Speedup against core count for p = ${plain(p)}: the curve rises from 1× at one core and flattens towards ` +
      `${Number.isFinite(limit) ? `the ceiling of ${formatCeiling(p)}` : 'no ceiling'}; at N = ${thousands(n)} it is ${formatSpeedup(s, limit)}.`,
  );
}

export function mount(figure, params) {
  instances += 1;
  const id = (suffix) => `wb-amdahl-${instances}-${suffix}`;
  const state = {
    p: clampNumber(params.p ?? 0.95, 0, 1, 0.95),
    n: Math.round(clampNumber(params.n ?? 64, 1, MAX_CORES, 64)),
  };

  const root = el('div', 'wb-amdahl');
  const controls = el('div', 'wb-controls wb-controls-pairs');

  const pField = el('div', 'wb-field wb-pair');
  const pRange = el('input', 'wb-range');
  Object.assign(pRange, { type: 'range', id: id('p-range'), min: 0, max: 1, step: 0.01 });
  const pNumber = el('input', 'wb-input wb-input-short');
  Object.assign(pNumber, { type: 'number', id: id('p-number'), min: 0, max: 1, step: 0.001 });
  pNumber.inputMode = 'decimal';
  pField.append(
    label(id('p-range'), 'Parallel fraction p'),
    el('div', 'wb-pair-inputs'),
  );
  pField.lastChild.append(pRange, label(id('p-number'), 'p, exact value', 'wb-visually-hidden'), pNumber);

  const nField = el('div', 'wb-field wb-pair');
  const nRange = el('input', 'wb-range');
  Object.assign(nRange, { type: 'range', id: id('n-range'), min: 0, max: SLIDER_CORE_COUNTS.length - 1, step: 1 });
  const nNumber = el('input', 'wb-input wb-input-short');
  Object.assign(nNumber, { type: 'number', id: id('n-number'), min: 1, max: MAX_CORES, step: 1 });
  nNumber.inputMode = 'numeric';
  nField.append(label(id('n-range'), 'Cores N'), el('div', 'wb-pair-inputs'));
  nField.lastChild.append(nRange, label(id('n-number'), 'N, exact value', 'wb-visually-hidden'), nNumber);
  controls.append(pField, nField);

  const headline = el('div', 'wb-amdahl-headline');
  const speedupValue = el('p', 'wb-big');
  const ceilingValue = el('p', 'wb-big wb-big-secondary');
  headline.append(speedupValue, ceilingValue);
  const result = el('p', 'wb-result');
  result.setAttribute('aria-live', 'polite');
  const steps = el('pre', 'wb-steps');
  steps.setAttribute('aria-label', 'The formula worked out');

  const chart = svg('svg', { class: 'wb-chart', role: 'img' });

  const tableCaption = el('caption', null, '');
  const tableBody = el('tbody');
  const tableNode = el('table', 'wb-table');
  const head = el('thead');
  const headRow = el('tr');
  for (const text of ['Cores N', 'Speedup S']) {
    const th = el('th', null, text);
    th.scope = 'col';
    headRow.append(th);
  }
  head.append(headRow);
  tableNode.append(tableCaption, head, tableBody);

  root.append(controls, headline, result, steps, chart, tableNode);
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);

  const chartWidth = () => Math.max(240, Math.min(640, root.clientWidth));

  function render({ fromRange = false } = {}) {
    const { p, n } = state;
    const s = speedup(p, n);
    if (!fromRange) {
      pRange.value = String(p);
      nRange.value = String(coresToSlider(n));
    }
    pRange.setAttribute('aria-valuetext', `p = ${plain(p)}`);
    nRange.setAttribute('aria-valuetext', `${thousands(n)} cores`);
    if (document.activeElement !== pNumber) pNumber.value = String(p);
    if (document.activeElement !== nNumber) nNumber.value = String(n);

    const limit = ceiling(p);
    speedupValue.textContent = `S = ${formatSpeedup(s, limit)}`;
    ceilingValue.textContent = `ceiling ${formatCeiling(p)}`;
    const percent = shareOfCeiling(p, n) * 100;
    const share = percent >= 99 && percent < 100 ? 'over 99%' : `${Math.round(percent)}%`;
    if (p === 0) {
      result.textContent = `With p = 0 nothing runs in parallel, so extra cores do nothing: S = ${formatSpeedup(s, limit)}.`;
    } else if (Number.isFinite(limit)) {
      result.textContent =
        `With p = ${plain(p)} and N = ${thousands(n)}, the speedup is ${formatSpeedup(s, limit)}, ` +
        `${share} of the ceiling 1 / (1 − p) = ${formatCeiling(p)}, which no number of cores can pass.`;
    } else {
      result.textContent = `With p = 1 nothing is serial: the speedup is N itself, ${formatSpeedup(s, limit)}. Real jobs always keep a serial part.`;
    }
    steps.textContent = workedSteps(p, n).join('\n');

    tableCaption.textContent = `Speedup at p = ${plain(p)}`;
    tableBody.replaceChildren();
    for (const row of table(p)) {
      const tr = el('tr');
      if (row.n === n) tr.className = 'wb-row-current';
      tr.append(el('td', null, thousands(row.n)), el('td', null, formatSpeedup(row.s, limit)));
      tableBody.append(tr);
    }
    drawChart(chart, chartWidth(), p, n);
  }

  pRange.addEventListener('input', () => {
    state.p = Number(pRange.value);
    render({ fromRange: true });
  });
  nRange.addEventListener('input', () => {
    state.n = sliderToCores(Number(nRange.value));
    render({ fromRange: true });
  });
  pNumber.addEventListener('input', () => {
    state.p = clampNumber(pNumber.value, 0, 1, state.p);
    render();
  });
  nNumber.addEventListener('input', () => {
    state.n = Math.round(clampNumber(nNumber.value, 1, MAX_CORES, state.n));
    render();
  });
  for (const [input, key] of [[pNumber, 'p'], [nNumber, 'n']]) {
    input.addEventListener('change', () => {
      input.value = String(state[key]);
    });
  }

  new ResizeObserver(() => drawChart(chart, chartWidth(), state.p, state.n)).observe(root);
  render();
}
