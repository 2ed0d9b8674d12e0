// Live experiment "matmul-crossover" (lesson 1): POST /api/experiments/matmul
// {"max_size"} and chart square FP32 matmul time (or achieved GFLOP/s) against matrix
// side on log axes: CPU SGEMM, GPU cuBLAS with the data already on the GPU, and GPU
// counting the copy in. The crossover sizes (first n from which the GPU keeps winning)
// are marked on the chart and stated in words; without a GPU the panel says there is
// nothing to cross and points at how the CPU's rate changes with size.
// Under the findings, how the CPU line compares with OpenBLAS recorded on this machine
// (blas-reference.js, from the card's `cpu.blas_reference`), or how to record it.
// Below the figures, where the result sits against this device's measured ceilings
// (panel-ceiling.js), and the run's timeline from the same clock readings: lanes, a table and
// "Download trace" (panel-trace.js).

import {
  el, showResults, uniqueId, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails, legend,
  experimentSpec, boundsOf, startValue,
} from './panel.js';
import { mountChart, axis, xAxis, lineSeries, log2Values, bandFill, bandEdge } from './panel-chart.js';
import { matmulSeries, crossoverSize } from '../logic/panel-series.js';
import { blasComparison } from '../logic/blas-reference.js';
import { bandColumns, spreadFindings } from '../logic/sweep-spread.js';
import { formatFlops, formatMs, formatSig, formatTimes, formatError, powerOfTwoSteps, largestStepAtMost } from '../logic/panel-format.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';

const CPU_DEFAULT_SIZE = 512;
const side = (n) => `${n}\u00a0×\u00a0${n}`;

function crossovers(result) {
  const pick = (field, key) => (field in result ? result[field] : crossoverSize(result.rows, key));
  return { resident: pick('crossover_size', 'gpu_ms'), withCopy: pick('crossover_with_copy_size', 'gpu_with_copy_ms') };
}

function findings(result, data, cross) {
  const { sizes, series } = data;
  const cpu = series.find((s) => s.key === 'cpu_ms');
  const gpu = series.find((s) => s.key === 'gpu_ms');
  const out = [];
  if (!gpu) {
    out.push(finding('No GPU on this server, so there is no crossover to find: the chart shows the CPU only.', 'warn'));
  } else {
    out.push(finding(cross.resident
      ? `With the data already on the GPU, the GPU is faster from ${side(cross.resident)} upward; below that, launch overhead makes the CPU the better choice.`
      : `The GPU never stayed ahead of the CPU up to ${side(sizes[sizes.length - 1])} with the data already on it.`, cross.resident ? 'good' : 'warn'));
    out.push(finding(cross.withCopy
      ? `Counting the copy of both inputs, the GPU wins from ${side(cross.withCopy)}: moving data pushes the crossover ${cross.withCopy > (cross.resident || 0) ? 'to larger sizes' : 'no further'}.`
      : 'Counting the copy of both inputs, the GPU never stayed ahead at these sizes: the copy costs more than the GPU saves.'));
  }
  if (cpu) {
    const rates = cpu.gflops.filter((v) => v !== null);
    if (rates.length > 1) {
      const [first, last] = [rates[0], rates[rates.length - 1]];
      const why = last > first
        ? 'small products are too little work to keep every core busy.'
        : 'the rate did not rise with size this time; another program may have shared the CPU, so run it again.';
      out.push(finding(`The CPU reached ${formatFlops(first * 1e9)} at ${side(sizes[0])} and ${formatFlops(last * 1e9)} at ${side(sizes[rates.length - 1])}: ${why}`));
    }
    const ms = cpu.ms;
    const n = ms.length;
    if (n >= 2 && ms[n - 1] && ms[n - 2]) {
      out.push(finding(`From ${side(sizes[n - 2])} to ${side(sizes[n - 1])} the CPU time grew ${formatTimes(ms[n - 1] / ms[n - 2])}; the work grows 8× per doubling of n (2n³ FLOP).`));
    }
  }
  return out;
}

/** The CPU line against OpenBLAS on this machine, when there is a CPU line. */
function cpuAgainstLibrary(result, series, reference) {
  if (!series.some((s) => s.key === 'cpu_ms')) return [];
  const { text, tone } = blasComparison(result.rows, reference);
  return [finding(text, tone)];
}

function drawCrossovers(cross, colors) {
  return (u) => {
    const marks = [];
    if (cross.resident) marks.push([cross.resident, 'GPU ahead (data on GPU)']);
    if (cross.withCopy) {
      if (cross.withCopy === cross.resident) marks[0][1] = 'GPU ahead (with and without copy)';
      else marks.push([cross.withCopy, 'GPU ahead (with copy)']);
    }
    const { ctx } = u;
    const ratio = window.devicePixelRatio || 1;
    ctx.save();
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    marks.forEach(([size, label], i) => {
      const x = u.valToPos(Math.log2(size), 'x', true);
      ctx.strokeStyle = colors.fg;
      ctx.setLineDash([3 * ratio, 3 * ratio]);
      ctx.lineWidth = ratio;
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.fillStyle = colors.fg;
      ctx.font = `${12 * ratio}px system-ui, sans-serif`;
      const width = ctx.measureText(label).width;
      const right = x + 4 * ratio + width > u.bbox.left + u.bbox.width;
      ctx.fillText(label, right ? x - 4 * ratio - width : x + 4 * ratio, u.bbox.top + (14 + 16 * i) * ratio);
    });
    ctx.restore();
  };
}

/**
 * Log-axis splits at powers of ten only (every 2…9 gridline is too busy), plus 2× and 5×
 * when the data spans less than two decades, so a short axis still has a few labels.
 */
function decades(_u, _axis, min, max) {
  const steps = Math.log10(max / min) < 2 ? [1, 2, 5] : [1];
  const out = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e += 1) {
    for (const m of steps) {
      const v = m * 10 ** e;
      if (v >= min * 0.999 && v <= max * 1.001) out.push(v);
    }
  }
  return out;
}

/** The band's [low, high] edges for `key` in the chart's unit (GFLOP/s flips them). */
function bandData(rows, key, mode) {
  const { low, high } = bandColumns(rows, key);
  if (mode !== 'gflops') return [low, high];
  const rate = (row, ms) => (ms > 0 ? (row.flop ?? 2 * row.size ** 3) / (ms * 1e6) : null);
  return [high.map((ms, i) => rate(rows[i], ms)), low.map((ms, i) => rate(rows[i], ms))];
}

function renderChart(host, result, data, cross, mode, state) {
  if (state.chart) state.chart.destroy();
  const { sizes, series } = data;
  const field = mode === 'gflops' ? 'gflops' : 'ms';
  const what = mode === 'gflops' ? 'achieved GFLOP/s' : 'milliseconds per product';
  const summary = `Line chart, log scales: ${what} against matrix side from ${sizes[0]} to ${sizes[sizes.length - 1]} for ${series.map((s) => s.label).join('; ')}; a shaded band around each line spans the middle half of its samples (interquartile range). ${cross.resident ? `The GPU is faster from ${side(cross.resident)}.` : 'No crossover is marked.'} The table below lists every value.`;
  const format = mode === 'gflops' ? (v) => formatSig(v) : (v) => formatMs(v);
  // Two invisible edges per series (quartiles) with a shaded band between them.
  const bandSeries = series.flatMap((s) => [bandEdge(`${s.short} q1`), bandEdge(`${s.short} q3`)]);
  state.chart = mountChart(host, {
    summary,
    build: (colors) => ({
      opts: {
        scales: { x: { time: false, range: (_u, lo, hi) => [lo - 0.3, hi + 0.3] }, y: { distr: 3 } },
        axes: [
          xAxis(colors, { label: 'Matrix side n (log scale)', values: log2Values((n) => String(n)), incrs: [1, 2] }),
          axis(colors, { label: mode === 'gflops' ? 'GFLOP/s (log scale)' : 'Time per product (log scale)', size: 64, splits: decades, values: (_u, splits) => splits.map((v) => (v === null || v === undefined ? '' : format(v))) }),
        ],
        series: [{}, ...series.map((s) => lineSeries(colors, s)), ...bandSeries],
        bands: series.map((s, i) => ({ series: [1 + series.length + 2 * i + 1, 1 + series.length + 2 * i], fill: bandFill(colors[s.tone]) })),
        hooks: { draw: [drawCrossovers(cross, colors)] },
      },
      data: [
        sizes.map((n) => Math.log2(n)),
        ...series.map((s) => s[field].map((v) => (v > 0 ? v : null))),
        ...series.flatMap((s) => bandData(result.rows, s.key, mode)),
      ],
    }),
  });
}

function render(results, result, state) {
  const data = matmulSeries(result.rows);
  const cross = crossovers(result);
  const { sizes, series } = data;
  const gpuPresent = series.some((s) => s.key === 'gpu_ms');
  const chartHost = el('div', {});
  const toggleName = uniqueId('matmul-mode');
  const toggle = el('fieldset', { class: 'exp-toggle' }, el('legend', {}, 'Chart shows'),
    ['time', 'gflops'].map((mode) => el('label', {},
      el('input', { type: 'radio', name: toggleName, value: mode, checked: mode === state.mode }),
      mode === 'time' ? ' time per product' : ' achieved GFLOP/s')));
  toggle.addEventListener('change', (event) => {
    state.mode = event.target.value;
    renderChart(chartHost, result, data, cross, state.mode, state);
  });
  const stats = [
    { label: 'Crossover, data on GPU', value: gpuPresent ? (cross.resident ? side(cross.resident) : 'none') : 'no GPU' },
    { label: 'Crossover, with copy', value: gpuPresent ? (cross.withCopy ? side(cross.withCopy) : 'none') : 'no GPU' },
    ...series.map((s) => ({ label: `Best rate: ${s.key === 'cpu_ms' ? 'CPU' : s.key === 'gpu_ms' ? 'GPU' : 'GPU with copy'}`, value: formatFlops(Math.max(...s.gflops.filter((v) => v !== null)) * 1e9) })),
  ];
  if (Number.isFinite(result.max_abs_diff_vs_cpu)) {
    stats.push({ label: 'GPU vs CPU at 256 × 256', value: formatError(result.max_abs_diff_vs_cpu), hint: 'largest element difference' });
  }
  const columns = [{ label: 'Size' }, ...series.map((s) => ({ label: `${s.short} time`, numeric: true })), ...series.map((s) => ({ label: `${s.short} rate`, numeric: true })), ...series.map((s) => ({ label: `${s.short} middle half (IQR), samples`, numeric: true }))];
  const spreadCell = (row, key) => {
    const m = row[key];
    if (!m) return '—';
    const band = Number.isFinite(m.q1) ? `${formatMs(m.q1)}–${formatMs(m.q3)}` : `${formatMs(m.min)}–${formatMs(m.max)} (min–max)`;
    return `${band}, ${m.samples}${m.outliers ? `, ${m.outliers} outlier${m.outliers === 1 ? '' : 's'}` : ''}`;
  };
  const rows = sizes.map((n, i) => [side(n), ...series.map((s) => (s.ms[i] === null ? 'skipped (too slow)' : formatMs(s.ms[i]))), ...series.map((s) => (s.gflops[i] === null ? '—' : formatFlops(s.gflops[i] * 1e9))), ...series.map((s) => spreadCell(result.rows[i], s.key))]);
  const spread = spreadFindings(result.rows, series, side);
  showResults(results, 
    statList(stats),
    toggle,
    chartHost,
    legend([...series.map((s) => ({ label: s.label, tone: s.tone, dash: s.dash })), { label: 'Shaded: middle half of the samples (IQR)', tone: 'muted', fill: true }]),
    ...findings(result, data, cross),
    ...cpuAgainstLibrary(result, series, state.blasReference),
    ...spread.map((f) => finding(f.text, f.tone)),
    dataTable({ caption: 'Median per size (FP32, 2n³ FLOP per product); each size repeated at least 5 times, more until its spread settled or its time budget ran out', columns, rows }),
    ceilingView('matmul', result),
    traceView(result.trace, 'matmul'),
    provenanceDetails(result.provenance),
  );
  renderChart(chartHost, result, data, cross, state.mode, state);
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'matmul');
  const { min, max: cap } = boundsOf(spec, 'max_size');
  const steps = powerOfTwoSteps(min, cap);
  let target = startValue(spec, params, 'max_size');
  if (device.kind === 'cpu') target = Math.min(target, CPU_DEFAULT_SIZE);
  const state = { chart: null, mode: 'time', blasReference: (device.cpu && device.cpu.blas_reference) || null };
  standardPanel(figure, device, {
    experiment: 'matmul',
    intro: 'Square FP32 matrix products from 16 × 16 upward, timed on the CPU and, when there is one, on the GPU.',
    fields: [{
      name: 'max_size',
      label: 'Largest matrix side',
      type: 'select',
      value: largestStepAtMost(steps, target),
      options: steps.map((n) => ({ value: n, label: side(n) })),
      hint: `Doubling from 16; up to ${side(cap)} on this server`,
    }],
    runLabel: 'Run the sweep',
    resultsSize: 'chart',
    onRun: async (values, { status, results }) => {
      const result = await runJob({ url: spec.path, body: { max_size: values.max_size }, status, device, results });
      if (result) render(results, result, state);
    },
  });
}
