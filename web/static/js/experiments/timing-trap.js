// Live experiment "timing-trap" (lesson 5): POST /api/experiments/timing {} and show the
// three clocks — a host timer stopped when the launches return, a host timer stopped
// after synchronising, the device's own timestamps — and a two-lane timeline (CPU
// launches above, device work below) drawn from the result's cpu_lane / device_lane,
// with the moments each host timer stopped marked, so the work the first timer missed
// is visible. On the CPU backend a worker thread plays the GPU's stream. Below, a note on
// why none of this device's ceilings applies to clocks (panel-ceiling.js) and the trace.

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails, legend,
  experimentSpec,
} from './panel.js';
import { mountChart, axis, xAxis } from './panel-chart.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';
import { timelineEnd, hiddenWork } from '../logic/panel-series.js';
import { formatMs, formatSig } from '../logic/panel-format.js';
import { timingTrapVerdict } from '../logic/measured-verdicts.js';

// Lanes in y units; the band above 2 holds the labels of the timer marks.
const LANES = { cpu: [1.15, 1.85], device: [0.15, 0.85] };
const Y_TOP = 2.7;

function drawTimeline(result, colors) {
  return (u) => {
    const { ctx } = u;
    const ratio = window.devicePixelRatio || 1;
    const x = (ms) => u.valToPos(ms, 'x', true);
    const y = (v) => u.valToPos(v, 'y', true);
    ctx.save();
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.setLineDash([]);
    const lane = (spans, [lo, hi], tone) => {
      spans.forEach((span) => {
        const left = x(span.start_ms);
        const width = Math.max(2 * ratio, x(span.end_ms) - left);
        ctx.fillStyle = colors[tone];
        ctx.fillRect(left, y(hi), width, y(lo) - y(hi));
        ctx.strokeStyle = colors.panel;
        ctx.lineWidth = ratio;
        ctx.strokeRect(left, y(hi), width, y(lo) - y(hi));
      });
    };
    lane(result.cpu_lane || [], LANES.cpu, 'warn');
    lane(result.device_lane || [], LANES.device, 'accent');
    const marks = [[result.host_no_sync_ms, 'timer without sync stops', 2.45], [result.host_sync_ms, 'timer with sync stops', 2.15]];
    ctx.font = `${12 * ratio}px system-ui, sans-serif`;
    marks.forEach(([ms, label, row]) => {
      ctx.setLineDash([3 * ratio, 3 * ratio]);
      ctx.lineWidth = ratio;
      const at = x(ms);
      ctx.strokeStyle = colors.fg;
      ctx.beginPath();
      ctx.moveTo(at, u.bbox.top);
      ctx.lineTo(at, u.bbox.top + u.bbox.height);
      ctx.stroke();
      const width = ctx.measureText(label).width;
      const flip = at + 4 * ratio + width > u.bbox.left + u.bbox.width;
      ctx.fillStyle = colors.fg;
      ctx.fillText(label, flip ? at - 4 * ratio - width : at + 4 * ratio, y(row));
    });
    ctx.restore();
  };
}

function render(results, result, device, state) {
  const cpuBackend = result.provenance && result.provenance.backend === 'cpu';
  const deviceWord = cpuBackend ? 'stream thread' : 'GPU';
  const end = Math.max(timelineEnd(result), result.host_sync_ms || 0);
  const hidden = hiddenWork(result);
  const launches = (result.cpu_lane || []).length;
  // Computed from the two host timers shown in the stats, on this backend.
  const verdict = timingTrapVerdict(result, hidden.afterMs, deviceWord);
  if (state.chart) state.chart.destroy();
  const chartHost = el('div', {});
  const summary = `Timeline with two lanes over ${formatMs(end)}: the CPU issued ${launches} launches, all finished by ${formatMs(hidden.cpuEnd)}; the ${deviceWord} ran ${(result.device_lane || []).length} pieces of work until ${formatMs(hidden.deviceEnd)}. The timer without synchronising stopped at ${formatMs(result.host_no_sync_ms)}, the one with synchronising at ${formatMs(result.host_sync_ms)}. The table below lists every span.`;
  const stats = [
    { label: 'Host timer, no synchronise', value: formatMs(result.host_no_sync_ms), hint: 'stops when the launches return' },
    { label: 'Host timer, synchronised', value: formatMs(result.host_sync_ms), hint: 'waits for the work to finish' },
    { label: cpuBackend ? "Stream thread's clock" : 'CUDA events', value: formatMs(result.device_ms), hint: 'first work start to last work end' },
    { label: 'Under-reported by', value: verdict ? verdict.headline : '—', hint: 'synchronised ÷ unsynchronised' },
    { label: 'Each piece of work', value: formatMs(result.kernel_ms), hint: result.calibration && result.calibration.converged ? `calibrated to about ${formatMs(result.calibration.target_ms)}` : 'calibration did not reach its target' },
  ];
  const spans = (result.cpu_lane || []).map((launch, i) => {
    const work = (result.device_lane || [])[i];
    return [String(i), `${formatSig(launch.start_ms)}–${formatSig(launch.end_ms)}`, work ? `${formatSig(work.start_ms)}–${formatSig(work.end_ms)}` : '—'];
  });
  showResults(results, 
    statList(stats),
    verdict ? finding(verdict.text, verdict.tone) : null,
    cpuBackend ? finding('No GPU here: a worker thread plays the GPU stream. The host hands it work and returns at once, the same asynchrony that makes the trap on a GPU.') : null,
    chartHost,
    legend([
      { label: 'CPU: a launch call (enqueue and return)', tone: 'warn', fill: true },
      { label: cpuBackend ? 'Stream thread: the work running' : 'GPU: the kernel running', tone: 'accent', fill: true },
      { label: 'When each host timer stopped', tone: 'fg', dash: true },
    ]),
    dataTable({
      caption: 'Each launch and the work it queued, in ms from the start of the run',
      columns: [{ label: '#' }, { label: 'CPU launch call (ms)', numeric: true }, { label: cpuBackend ? 'Stream thread work (ms)' : 'GPU kernel (ms)', numeric: true }],
      rows: spans,
    }),
    ceilingView('timing', result),
    traceView(result.trace, 'timing'),
    provenanceDetails(result.provenance),
  );
  state.chart = mountChart(chartHost, {
    summary,
    height: () => 220,
    build: (colors) => ({
      opts: {
        scales: { x: { time: false, range: () => [0, end * 1.03] }, y: { range: () => [0, Y_TOP] } },
        axes: [
          xAxis(colors, { label: 'Milliseconds since the run started', values: (_u, splits) => splits.map((v) => formatSig(v)) }),
          axis(colors, { size: 70, splits: () => [0.5, 1.5], values: (_u, splits) => splits.map((v) => (v < 1 ? (cpuBackend ? 'Stream' : 'GPU') : 'CPU')), grid: { show: false } }),
        ],
        series: [{}, { label: 'lanes', show: false }],
        hooks: { draw: [drawTimeline(result, colors)] },
      },
      data: [[0, end], [null, null]],
    }),
  });
}

export async function mount(figure) {
  const info = await loadDevice();
  const device = info && info.device;
  const state = { chart: null };
  standardPanel(figure, device, {
    experiment: 'timing',
    intro: 'Eight pieces of work of about 5 ms each are queued back to back, then timed three ways.',
    fields: [],
    runLabel: 'Run the timing test',
    resultsSize: 'chart',
    onRun: async (_values, { status, results }) => {
      const result = await runJob({ url: experimentSpec(info, 'timing').path, body: {}, status, device, results });
      if (result) render(results, result, device, state);
    },
  });
}
