// Live experiment "training-run" (lesson 6): POST /api/experiments/training {batch,
// hidden, steps, log_every, precision, optimizer} and show the loss curve (with ln 3, the
// loss of even guessing, as a reference line), step time, samples per second, accuracy
// and the measured cost of reading the loss every step against every N steps. Runs are
// kept on the page (the last four) so a student can change one setting and compare.
// Below the figures, the latest run's GEMM throughput against this device's GEMM ceiling
// (panel-ceiling.js), and its timeline from the same clock readings: lanes, a table and
// "Download trace" (panel-trace.js).

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails, legend, resultBackendNote,
  experimentSpec, boundsOf, startValue,
} from './panel.js';
import { mountChart, axis, xAxis, lineSeries, referenceSeries } from './panel-chart.js';
import { CHANCE_LOSS } from '../logic/panel-series.js';
import { trainingLoggingVerdict } from '../logic/measured-verdicts.js';
import { clampInt } from '../logic/numbers.js';
import { formatInt, formatMs, formatPercent, formatSig, formatSpread } from '../logic/panel-format.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';

const KEEP_RUNS = 4;
const RUN_STYLES = [
  { tone: 'accent', dash: false },
  { tone: 'warn', dash: true },
  { tone: 'note', dash: true },
  { tone: 'muted', dash: true },
];

const runName = (run, latest) => `Run ${run.runNumber}${latest ? ' (latest)' : ''}`;
const describe = (p) => `batch ${formatInt(p.batch)}, hidden ${formatInt(p.hidden)}, ${formatInt(p.steps)} steps, ${p.precision.toUpperCase()}, ${p.optimizer === 'adam' ? 'Adam' : 'SGD'}`;

function findings(result) {
  const out = [];
  const curve = result.loss_curve || [];
  if (curve.length) {
    const first = curve[0].loss;
    const last = curve[curve.length - 1].loss;
    out.push(finding(`The loss went from ${formatSig(first)} at step ${curve[0].step} to ${formatSig(last)} at step ${curve[curve.length - 1].step}; guessing evenly between the three actions scores ln 3 ≈ 1.10.`, last < CHANCE_LOSS ? 'good' : 'warn'));
  }
  // Computed from the probe's two numbers and this run's step spread, on its backend.
  const verdict = trainingLoggingVerdict(result);
  if (verdict) out.push(finding(verdict.text, verdict.tone));
  return out;
}

function render(results, runs, device, state) {
  const latest = runs[runs.length - 1];
  if (state.chart) state.chart.destroy();
  const chartHost = el('div', {});
  const stats = [
    { label: 'Final loss', value: formatSig(latest.loss_curve.length ? latest.loss_curve[latest.loss_curve.length - 1].loss : NaN), hint: 'chance: 1.10' },
    { label: 'Accuracy', value: formatPercent(latest.accuracy), hint: 'on all 4,096 tickets' },
    { label: 'Step time', value: formatMs(latest.step_ms.median), hint: `median; ${formatMs(latest.step_ms.min)} to ${formatMs(latest.step_ms.max)}` },
    { label: 'Throughput', value: `${formatSig(latest.samples_per_sec)} samples/s`, hint: 'batch × steps ÷ total training time' },
  ];
  const styled = runs.map((run, i) => ({ run, style: RUN_STYLES[runs.length - 1 - i], label: `${runName(run, i === runs.length - 1)}: ${describe(run.params)}` }));
  const xMax = Math.max(...runs.map((r) => r.params.steps));
  const yMax = Math.max(CHANCE_LOSS * 1.1, ...runs.flatMap((r) => r.loss_curve.map((p) => p.loss)));
  const summary = `Line chart of training loss against step for ${runs.length === 1 ? 'one run' : `${runs.length} runs`}; the latest falls from ${formatSig(latest.loss_curve[0] ? latest.loss_curve[0].loss : NaN)} to ${stats[0].value}, with the chance level ln 3 as a dotted line. The table below lists each run.`;
  const runRows = runs.map((run, i) => {
    const verdict = trainingLoggingVerdict(run);
    return [
      runName(run, i === runs.length - 1),
      describe(run.params),
      formatSig(run.loss_curve.length ? run.loss_curve[run.loss_curve.length - 1].loss : NaN),
      formatPercent(run.accuracy),
      formatSpread(run.step_ms, formatMs),
      formatSig(run.samples_per_sec),
      `${formatMs(run.read_every_step_ms)} vs ${formatMs(run.read_every_n_ms)}${verdict ? ` (${verdict.headline})` : ''}`,
    ];
  });
  const curveTable = dataTable({
    caption: 'Loss at each logged step (latest run)',
    columns: [{ label: 'Step' }, { label: 'Loss', numeric: true }],
    rows: latest.loss_curve.map((p) => [formatInt(p.step), formatSig(p.loss, 4)]),
  });
  showResults(results, 
    resultBackendNote(latest.provenance, device),
    statList(stats),
    chartHost,
    legend([...styled.map((s) => ({ label: s.label, tone: s.style.tone, dash: s.style.dash })), { label: 'Chance: ln 3 ≈ 1.10', tone: 'muted', dash: true }]),
    ...findings(latest),
    dataTable({
      caption: `Runs on this page (the last ${KEEP_RUNS} are kept): change one setting and run again to compare`,
      columns: [{ label: 'Run' }, { label: 'Settings' }, { label: 'Final loss', numeric: true }, { label: 'Accuracy', numeric: true }, { label: 'Step time, median (min–max)', numeric: true }, { label: 'Samples/s', numeric: true }, { label: 'Read loss every step vs every N', numeric: true }],
      rows: runRows,
    }),
    el('details', { class: 'exp-provenance' }, el('summary', {}, 'Loss at each logged step'), curveTable),
    ceilingView('training', latest),
    traceView(latest.trace, 'training'),
    provenanceDetails(latest.provenance),
  );
  // Every run's curve on a shared step axis: uPlot needs one x array, so align by step.
  const steps = [...new Set(runs.flatMap((r) => r.loss_curve.map((p) => p.step)))].sort((a, b) => a - b);
  const columns = styled.map(({ run }) => {
    const byStep = new Map(run.loss_curve.map((p) => [p.step, p.loss]));
    return steps.map((s) => (byStep.has(s) ? byStep.get(s) : null));
  });
  state.chart = mountChart(chartHost, {
    summary,
    build: (colors) => ({
      opts: {
        scales: { x: { time: false, range: () => [0, xMax] }, y: { range: () => [0, yMax * 1.05] } },
        axes: [
          xAxis(colors, { label: 'Step' }),
          axis(colors, { label: 'Loss (cross-entropy)', size: 48, values: (_u, splits) => splits.map((v) => formatSig(v)) }),
        ],
        series: [
          {},
          ...styled.map((s) => ({ ...lineSeries(colors, { label: s.label, ...s.style, points: steps.length <= 60 }), spanGaps: true })),
          referenceSeries(colors, 'Chance'),
        ],
      },
      data: [steps, ...columns, steps.map(() => CHANCE_LOSS)],
    }),
  });
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'training');
  const [batch, hidden, stepBounds] = ['batch', 'hidden', 'steps'].map((f) => boundsOf(spec, f));
  const steps = startValue(spec, params, 'steps');
  const choice = (field, options) => (options.includes(params[field]) ? params[field] : spec.defaults[field]);
  const state = { chart: null };
  const runs = [];
  let counter = 0;
  const panel = standardPanel(figure, device, {
    experiment: 'training',
    intro: 'A small classifier (Linear → ReLU → Linear) learns to route synthetic access tickets to one of three actions.',
    fields: [
      { name: 'batch', label: 'Batch size', type: 'number', ...batch, value: startValue(spec, params, 'batch'), hint: `tickets per step, ${formatInt(batch.min)} to ${formatInt(batch.max)}` },
      { name: 'hidden', label: 'Hidden width', type: 'number', ...hidden, value: startValue(spec, params, 'hidden'), hint: `${formatInt(hidden.min)} to ${formatInt(hidden.max)}` },
      { name: 'steps', label: 'Steps', type: 'number', ...stepBounds, value: steps, hint: `${formatInt(stepBounds.min)} to ${formatInt(stepBounds.max)} on this server` },
      { name: 'log_every', label: 'Log the loss every', type: 'number', min: 1, max: steps, value: clampInt(params.log_every ?? spec.defaults.log_every, { min: 1, max: steps }), hint: 'steps (1 to the step count)' },
      { name: 'precision', label: 'Precision', type: 'select', value: choice('precision', ['fp32', 'bf16']), options: [{ value: 'fp32', label: 'FP32' }, { value: 'bf16', label: 'BF16 (mixed)' }] },
      { name: 'optimizer', label: 'Optimizer', type: 'select', value: choice('optimizer', ['adam', 'sgd']), options: [{ value: 'adam', label: 'Adam' }, { value: 'sgd', label: 'SGD' }] },
    ],
    runLabel: 'Train',
    resultsSize: 'chart',
    onRun: async (values, { status, results }) => {
      const body = { ...values, log_every: Math.min(values.log_every, values.steps) };
      const result = await runJob({ url: spec.path, body, status, device, results });
      if (!result) return;
      counter += 1;
      runs.push({ ...result, runNumber: counter });
      if (runs.length > KEEP_RUNS) runs.shift();
      render(results, runs, device, state);
    },
  });
  const { steps: stepsInput, log_every: logInput } = panel.controls.inputs;
  stepsInput.addEventListener('input', () => {
    const n = clampInt(stepsInput.value, stepBounds, steps);
    logInput.max = String(n);
  });
}
