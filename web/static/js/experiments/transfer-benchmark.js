// Live experiment "transfer-benchmark" (lesson 4): POST /api/experiments/transfer
// {"max_bytes"} and plot achieved bandwidth (GB/s, 1e9 bytes/s) against copy size on a
// log axis: host→device and device→host, from pinned and pageable memory, with the PCIe
// link's theoretical peak as a dotted line when the server knows it. On the CPU backend
// it is one host memcpy series, and the panel says there is no bus to measure.
// Below the figures, where the result sits against this device's measured ceilings
// (panel-ceiling.js), and the run's timeline from the same clock readings: lanes, a table and
// "Download trace" (panel-trace.js).

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails, legend,
  experimentSpec, boundsOf, startValue,
} from './panel.js';
import { mountChart, axis, xAxis, lineSeries, referenceSeries, log2Values, bandFill, bandEdge } from './panel-chart.js';
import { transferSeries, bestTransfer } from '../logic/panel-series.js';
import { spreadFindings } from '../logic/sweep-spread.js';
import { formatBytes, formatGbps, formatSig, formatSpread, powerOfTwoSteps, largestStepAtMost } from '../logic/panel-format.js';
import { transferFindings } from '../logic/transfer-findings.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';

const CPU_DEFAULT_BYTES = 64 * 1024 * 1024;

function findings(data, peak, device) {
  return transferFindings(data, peak, device ? device.name : null).map((f) => finding(f.text, f.tone));
}

function render(results, result, device, state) {
  const data = transferSeries(result.points);
  const peak = result.link_peak_gbps;
  const { sizes, series } = data;
  const best = bestTransfer(data);
  if (state.chart) state.chart.destroy();
  const summary = `Line chart of bandwidth in GB/s against transfer size from ${formatBytes(sizes[0])} to ${formatBytes(sizes[sizes.length - 1])} on a log scale, ${series.length} series${best ? `; the fastest is ${best.label} at ${formatGbps(best.gbps)}` : ''}${peak ? `; the link's theoretical peak is ${formatGbps(peak)}` : ''}. A shaded band around each line spans the middle half of its samples. The table below lists every value.`;
  const chartHost = el('div', {});
  const legendItems = series.map((s) => ({ label: s.label, tone: s.tone, dash: s.dash }));
  legendItems.push({ label: 'Shaded: middle half of the samples (IQR)', tone: 'muted', fill: true });
  // The spread per size, as Summary rows for the shared outlier/settling sentences.
  const spreadRows = sizes.map((size, i) => Object.fromEntries([['size', size], ...series.map((s) => [s.key, s.summaries[i]])]));
  const spread = spreadFindings(spreadRows, series, (b) => formatBytes(b));
  const hasBand = series.some((s) => s.q1.some((v) => v !== null && v !== undefined));
  if (peak) legendItems.push({ label: `Link theoretical peak (${formatGbps(peak)})`, tone: 'muted', dash: true });
  const columns = [{ label: 'Size' }, ...series.map((s) => ({ label: s.short, numeric: true }))];
  const rows = sizes.map((size, i) => [formatBytes(size), ...series.map((s) => formatSpread({ median: s.median[i], min: s.min[i], max: s.max[i] }))]);
  const stats = [];
  if (best) stats.push({ label: 'Fastest measured', value: formatGbps(best.gbps), hint: `${best.label}, ${formatBytes(best.bytes)}` });
  stats.push({ label: 'Link theoretical peak', value: peak ? formatGbps(peak) : 'none', hint: peak ? 'one direction, PCIe' : 'no GPU link on this server' });
  stats.push({ label: 'Sizes measured', value: String(sizes.length), hint: `${formatBytes(sizes[0])} to ${formatBytes(sizes[sizes.length - 1])}` });
  showResults(results, 
    statList(stats),
    chartHost,
    legend(legendItems),
    ...findings(data, peak, device),
    ...spread.map((f) => finding(f.text, f.tone)),
    dataTable({ caption: 'Bandwidth in GB/s per size: median (min–max) of at least 7 samples, more until the spread settled or the time budget ran out; GB = 1e9 bytes; H = host, D = device', columns, rows }),
    ceilingView('transfer', result),
    traceView(result.trace, 'transfer'),
    provenanceDetails(result.provenance),
  );
  const xs = sizes.map((s) => Math.log2(s));
  const yMax = Math.max(peak || 0, ...series.flatMap((s) => s.max.filter((v) => v !== null)));
  state.chart = mountChart(chartHost, {
    summary,
    build: (colors) => ({
      opts: {
        scales: { x: { time: false }, y: { range: () => [0, yMax * 1.08 || 1] } },
        axes: [
          xAxis(colors, { label: 'Transfer size (log scale)', values: log2Values((b) => formatBytes(b)), incrs: [2, 4, 6, 10] }),
          axis(colors, { label: 'GB/s', size: 56, values: (_u, splits) => splits.map((v) => (v === null || v === undefined ? '' : formatSig(v))) }),
        ],
        series: [
          {},
          ...series.map((s) => lineSeries(colors, s)),
          ...(peak ? [referenceSeries(colors, 'Link theoretical peak')] : []),
          ...(hasBand ? series.flatMap((s) => [bandEdge(`${s.short} q1`), bandEdge(`${s.short} q3`)]) : []),
        ],
        bands: hasBand ? series.map((s, i) => {
          const first = 1 + series.length + (peak ? 1 : 0) + 2 * i;
          return { series: [first + 1, first], fill: bandFill(colors[s.tone]) };
        }) : [],
      },
      data: [xs, ...series.map((s) => s.median), ...(peak ? [xs.map(() => peak)] : []), ...(hasBand ? series.flatMap((s) => [s.q1, s.q3]) : [])],
    }),
  });
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'transfer');
  const { min, max: cap } = boundsOf(spec, 'max_bytes');
  const steps = powerOfTwoSteps(Math.max(min, 4096), cap);
  let target = startValue(spec, params, 'max_bytes');
  if (device.kind === 'cpu') target = Math.min(target, CPU_DEFAULT_BYTES);
  const state = { chart: null };
  standardPanel(figure, device, {
    experiment: 'transfer',
    intro: 'Copies of growing size, timed repeatedly; the chart shows the median bandwidth of each.',
    fields: [{
      name: 'max_bytes',
      label: 'Largest copy',
      type: 'select',
      value: largestStepAtMost(steps, target),
      options: steps.map((s) => ({ value: s, label: formatBytes(s) })),
      hint: `Sizes from 1 KiB, ×4 each step; up to ${formatBytes(cap)} on this server`,
    }],
    runLabel: 'Run the benchmark',
    resultsSize: 'chart',
    onRun: async (values, { status, results }) => {
      const result = await runJob({ url: spec.path, body: { max_bytes: values.max_bytes }, status, device, results });
      if (result) render(results, result, device, state);
    },
  });
}
