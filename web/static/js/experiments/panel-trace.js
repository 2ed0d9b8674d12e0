// The run's timeline, from the Chrome trace an experiment's result carries (`trace`):
// a "Download trace" link that saves it as a .json file for ui.perfetto.dev or
// chrome://tracing (made in the browser from the result, so no route serves it), the
// same lanes drawn in the page as SVG (one row per track; hover or focus a bar for its
// name and duration), and every span in a table, the fallback for screen readers and
// for bars too thin to see. No build step: plain SVG and dom.js's el().

import { el, dataTable, uniqueId } from './panel-view.js';
import { traceLanes, traceEnd, spanCount, traceFileName } from '../logic/trace-lanes.js';
import { formatMs, formatSig } from '../logic/panel-format.js';

const SVG = 'http://www.w3.org/2000/svg';
const ROW = 28;
const LABEL = 150;
const WIDTH = 720;
/** Bars drawn at most; the table and the file hold every event. */
const MAX_BARS = 600;

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

const spanText = (s) => `${s.name}: ${formatMs(s.durMs)} from ${formatSig(s.startMs)} ms`;

function downloadLink(trace, experiment) {
  const link = el('a', { class: 'exp-button-secondary exp-button-small exp-trace-download', download: traceFileName(experiment), href: '#' }, 'Download trace');
  link.addEventListener('click', () => {
    const blob = new Blob([JSON.stringify(trace)], { type: 'application/json' });
    link.href = URL.createObjectURL(blob);
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  });
  return link;
}

function lanesSvg(lanes, end, summary) {
  const height = lanes.length * ROW + 24;
  const x = (ms) => LABEL + ((WIDTH - LABEL - 8) * ms) / (end || 1);
  const titleId = uniqueId('trace-title');
  const rows = [];
  let drawn = 0;
  lanes.forEach((lane, i) => {
    const y = i * ROW + 4;
    rows.push(svg('text', { x: 4, y: y + ROW / 2, class: 'exp-trace-label', 'dominant-baseline': 'middle' }, lane.name.length > 24 ? `${lane.name.slice(0, 23)}…` : lane.name));
    lane.spans.forEach((s) => {
      if (drawn >= MAX_BARS) return;
      drawn += 1;
      const left = x(s.startMs);
      const width = Math.max(1, x(s.startMs + s.durMs) - left);
      rows.push(svg('rect', { x: left, y: y + 3, width, height: ROW - 8, class: `exp-trace-bar exp-trace-${s.cat}` },
        svg('title', {}, spanText(s) + (s.count > 1 ? ` (${s.count} spans merged)` : ''))));
    });
  });
  rows.push(svg('text', { x: LABEL, y: height - 4, class: 'exp-trace-label' }, '0 ms'));
  rows.push(svg('text', { x: WIDTH - 8, y: height - 4, class: 'exp-trace-label', 'text-anchor': 'end' }, formatMs(end)));
  return svg('svg', { class: 'exp-trace-lanes', viewBox: `0 0 ${WIDTH} ${height}`, role: 'img', 'aria-labelledby': titleId },
    svg('title', { id: titleId }, summary), ...rows);
}

/** The trace block for a result's `trace`, or null when the result has none. */
export function traceView(trace, experiment) {
  const lanes = traceLanes(trace);
  if (!lanes.length) return null;
  const end = traceEnd(lanes);
  const count = spanCount(lanes);
  const summary = `Timeline of this run over ${formatMs(end)}: ${lanes.length} lanes (${lanes.map((l) => l.name).join('; ')}), ${count} spans. Every span is listed in the table below.`;
  const note = trace.otherData && trace.otherData.aggregated;
  const rows = lanes.flatMap((lane) => lane.spans.map((s) => [lane.name, s.name, formatSig(s.startMs), formatMs(s.durMs), String(s.count)]));
  return el('section', { class: 'exp-trace', 'aria-label': 'Trace of this run' },
    el('p', { class: 'exp-chart-title' }, 'Trace of this run'),
    el('p', { class: 'exp-trace-intro' },
      'The same timeline as a Chrome Trace Event file, the format torch.profiler exports: open it at ui.perfetto.dev or in chrome://tracing. ',
      downloadLink(trace, experiment)),
    lanesSvg(lanes, end, summary),
    note ? el('p', { class: 'exp-trace-note' }, `To keep the file small, ${note}.`) : null,
    el('details', { class: 'exp-trace-table' },
      el('summary', {}, `Every span in a table (${rows.length} rows)`),
      dataTable({
        caption: 'Spans of the trace, in ms from the start of the run',
        columns: [{ label: 'Lane' }, { label: 'Span' }, { label: 'Start (ms)', numeric: true }, { label: 'Duration', numeric: true }, { label: 'Spans merged', numeric: true }],
        rows,
      })),
  );
}
