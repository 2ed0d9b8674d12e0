// Live experiment "precision-shootout" (lesson 8): POST /api/experiments/precision
// {"size"} runs one n × n GEMM in FP32, TF32, FP16 and BF16 against an FP64 reference.
// The panel shows achieved TFLOP/s per format as bars (the device's estimated peak as an
// outline behind each, when known) and the largest relative error per format on a log
// scale, with the full numbers in a table. On the CPU backend TF32/FP16/BF16 are
// emulated by rounding: their errors are real, their speeds are FP32's, and it says so.
// Below the figures, where the result sits against this device's measured ceilings
// (panel-ceiling.js), and the run's timeline from the same clock readings: lanes, a table and
// "Download trace" (panel-trace.js).

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails, legend,
  experimentSpec, boundsOf, startValue,
} from './panel.js';
import { categoryBars } from './panel-bars.js';
import { formatError, formatFlops, formatMs, formatPercent, formatSpread, formatTimes, powerOfTwoSteps, largestStepAtMost } from '../logic/panel-format.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';

const CPU_DEFAULT_SIZE = 256;
const NAMES = { fp32: 'FP32', tf32: 'TF32', fp16: 'FP16', bf16: 'BF16' };
const nameOf = (row) => NAMES[row.precision] || row.precision.toUpperCase();
const side = (n) => `${n}\u00a0×\u00a0${n}`;

function findings(result) {
  const rows = result.rows;
  const by = Object.fromEntries(rows.map((r) => [r.precision, r]));
  const out = [];
  if (rows.some((r) => r.emulated)) {
    out.push(finding('No GPU: the CPU emulated TF32, FP16 and BF16 by rounding the inputs (and outputs) of an FP32 product. The errors are the real rounding errors of each format; the speeds are all FP32 speeds, so their differences are noise, not tensor cores.', 'warn'));
  } else if (by.fp32 && by.bf16) {
    out.push(finding(`BF16 reached ${formatFlops(by.bf16.tflops * 1e12)}, ${formatTimes(by.bf16.tflops / by.fp32.tflops)} the FP32 rate, and its largest relative error was ${formatTimes(by.bf16.max_rel_error / Math.max(by.fp32.max_rel_error, 1e-300))} FP32's.`));
  }
  if (by.tf32 && by.fp16) {
    out.push(finding(`TF32 and FP16 both keep 10 mantissa bits: their largest relative errors were ${formatError(by.tf32.max_rel_error)} and ${formatError(by.fp16.max_rel_error)}. BF16 keeps 7, and FP32 23.`));
  }
  if (result.peak_note && rows.some((r) => Number.isFinite(r.peak_tflops))) out.push(el('p', { class: 'exp-hint' }, `Peaks: ${result.peak_note}.`));
  return out;
}

function render(results, result) {
  const rows = result.rows || [];
  const peaks = rows.map((r) => (Number.isFinite(r.peak_tflops) ? r.peak_tflops : 0));
  const anyPeak = peaks.some((p) => p > 0);
  const rateMax = Math.max(...rows.map((r) => r.tflops), ...peaks) || 1;
  const errors = rows.map((r) => r.max_rel_error).filter((e) => e > 0);
  const errMin = errors.length ? Math.min(...errors) / 10 : 1e-8;
  const errMax = errors.length ? Math.max(...errors) * 2 : 1;
  const fastest = rows.reduce((a, b) => (b.tflops > a.tflops ? b : a), rows[0]);
  const accurate = rows.reduce((a, b) => (b.max_rel_error < a.max_rel_error ? b : a), rows[0]);
  const rateText = (r) => `${formatFlops(r.tflops * 1e12)}${Number.isFinite(r.peak_tflops) ? ` (${formatPercent(r.tflops / r.peak_tflops, 2)} of peak)` : ''}`;
  const rateSummary = `Bar chart of achieved rate per format: ${rows.map((r) => `${nameOf(r)} ${rateText(r)}`).join('; ')}.`;
  const errorSummary = `Bar chart, log scale, of the largest relative error against FP64: ${rows.map((r) => `${nameOf(r)} ${formatError(r.max_rel_error)}`).join('; ')}.`;
  const label = (r) => `${nameOf(r)}${r.emulated ? '*' : ''}`;
  showResults(results,
    statList([
      rows.some((r) => r.emulated)
        ? { label: 'Fastest', value: 'all FP32', hint: 'emulated formats run at FP32 speed' }
        : { label: 'Fastest', value: fastest ? nameOf(fastest) : '—', hint: fastest ? formatFlops(fastest.tflops * 1e12) : '' },
      { label: 'Most accurate', value: accurate ? nameOf(accurate) : '—', hint: accurate ? `relative error ${formatError(accurate.max_rel_error)}` : '' },
      { label: 'Product', value: side(result.size), hint: `against ${String(result.reference).toUpperCase()}` },
    ]),
    el('p', { class: 'exp-chart-title' }, 'Achieved rate (longer is faster)'),
    categoryBars(rows.map((r) => ({ label: label(r), value: r.tflops, ghost: peaks[rows.indexOf(r)], text: formatFlops(r.tflops * 1e12), tone: 'accent', pattern: r.emulated })), { summary: rateSummary, max: rateMax * 1.02 }),
    el('p', { class: 'exp-chart-title' }, 'Largest relative error against FP64 (log scale, shorter is more accurate)'),
    categoryBars(rows.map((r) => ({ label: label(r), value: r.max_rel_error, text: formatError(r.max_rel_error), tone: 'warn', pattern: r.emulated })), { summary: errorSummary, max: errMax, min: errMin, log: true }),
    legend([
      ...(anyPeak ? [{ label: 'Outline to the marker: the device’s estimated dense peak for that format', tone: 'fg', ghost: true }] : []),
      ...(rows.some((r) => r.emulated) ? [{ label: '* hatched: emulated on the CPU by rounding', tone: 'accent', fill: true, pattern: true }] : []),
    ]),
    ...findings(result),
    dataTable({
      caption: `One ${side(result.size)} product per format, median of the repetitions`,
      columns: [{ label: 'Format' }, { label: 'What ran' }, { label: 'Time, median (min–max)', numeric: true }, { label: 'Rate', numeric: true },
        ...(anyPeak ? [{ label: 'Estimated peak', numeric: true }] : []), { label: 'Max abs error', numeric: true }, { label: 'Max rel error', numeric: true }],
      rows: rows.map((r) => [label(r), r.compute, formatSpread(r.ms, formatMs), rateText(r),
        ...(anyPeak ? [Number.isFinite(r.peak_tflops) ? formatFlops(r.peak_tflops * 1e12) : 'unknown'] : []), formatError(r.max_abs_error), formatError(r.max_rel_error)]),
    }),
    ceilingView('precision', result),
    traceView(result.trace, 'precision'),
    provenanceDetails(result.provenance),
  );
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'precision');
  const { min, max: cap } = boundsOf(spec, 'size');
  const steps = powerOfTwoSteps(min, cap);
  let target = startValue(spec, params, 'size');
  if (device.kind === 'cpu') target = Math.min(target, CPU_DEFAULT_SIZE);
  standardPanel(figure, device, {
    experiment: 'precision',
    intro: 'The same matrix product in four formats, each compared with an FP64 reference.',
    fields: [{
      name: 'size',
      label: 'Matrix side',
      type: 'select',
      value: largestStepAtMost(steps, target),
      options: steps.map((n) => ({ value: n, label: side(n) })),
      hint: `${side(min)} up to ${side(cap)} on this server`,
    }],
    runLabel: 'Run the shoot-out',
    resultsSize: 'chart',
    onRun: async (values, { status, results }) => {
      const result = await runJob({ url: spec.path, body: { size: values.size }, status, device, results });
      if (result) render(results, result);
    },
  });
}
