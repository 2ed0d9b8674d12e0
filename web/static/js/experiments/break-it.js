// Live experiment "break-it" (lesson 9): POST /api/experiments/break-it {"case"} runs
// one mistake on purpose; the directive's params pick the case.
//  - batch-on-host: the batch stays in host memory while the model is on the device.
//    The panel lists where each weight and batch field lives (as the driver reports it),
//    shows the server's preflight message, the raw error PyTorch would raise, and the fix.
//  - log-every-step: the same training run reading the loss every step and every 50;
//    the panel compares throughput as bars and step times in a table, with the slowdown.

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails,
  experimentSpec,
} from './panel.js';
import { categoryBars } from './panel-bars.js';
import { formatBytes, formatInt, formatMs, formatSig, formatSpread } from '../logic/panel-format.js';
import { breakItLoggingVerdict } from '../logic/measured-verdicts.js';
import { ceilingView } from './panel-ceiling.js';

const CASES = {
  'batch-on-host': {
    intro: 'A training step whose batch was left in host memory while the model sits on the device.',
    runLabel: 'Start the broken run',
  },
  'log-every-step': {
    intro: 'The same training run twice: reading the loss to the host every step, then every 50 steps.',
    runLabel: 'Train both ways',
  },
};

function renderPlacement(results, result) {
  const fields = result.fields || [];
  const wrong = fields.filter((f) => !f.on_model_device);
  showResults(results,
    statList([
      { label: 'Model is on', value: result.model_device },
      { label: 'Buffers checked', value: formatInt(fields.length) },
      { label: 'On the wrong device', value: formatInt(wrong.length), hint: wrong.map((f) => f.name).join(', ') || 'none' },
    ]),
    result.preflight_error
      ? el('div', { class: 'exp-case-error' }, el('p', { class: 'exp-chart-title' }, 'The preflight stopped the run before the first step:'), el('pre', { class: 'exp-error-text exp-oom' }, result.preflight_error))
      : finding(`The preflight passed: every buffer is on ${result.model_device}.`, 'good'),
    result.note ? finding(result.note, 'warn') : null,
    dataTable({
      caption: 'Where each weight and batch field lives, as the driver reports it',
      columns: [{ label: 'Tensor' }, { label: 'Device' }, { label: 'Shape' }, { label: 'Bytes', numeric: true }, { label: `On ${result.model_device}?` }],
      rows: fields.map((f) => [f.name, f.device, `[${(f.shape || []).join(', ')}]`, formatBytes(f.bytes), f.on_model_device ? 'yes' : 'no: wrong device']),
    }),
    el('p', { class: 'exp-chart-title' }, 'The raw error PyTorch raises at the first forward pass:'),
    el('pre', { class: 'exp-error-text' }, result.pytorch_error),
    el('p', { class: 'exp-chart-title' }, 'The fix:'),
    el('pre', { class: 'exp-error-text exp-fix' }, el('code', {}, result.fix)),
    ceilingView('break-it', result),
    provenanceDetails(result.provenance),
  );
}

function renderLogging(results, result) {
  const runs = result.runs || [];
  const every = runs.find((r) => r.log_every === 1) || runs[0];
  const label = (r) => (r.log_every === 1 ? 'every step' : `every ${r.log_every}`);
  const summary = `Bar chart of training throughput: ${runs.map((r) => `reading the loss ${label(r)}, ${formatSig(r.samples_per_sec)} samples per second`).join('; ')}.`;
  // The verdict is computed from the two runs' medians and spreads shown in the table.
  const verdict = breakItLoggingVerdict(result);
  showResults(results,
    statList([
      { label: 'Reading every step vs every 50', value: verdict ? verdict.headline : '—', hint: 'median step time, compared with the runs\' spread' },
    ]),
    categoryBars(runs.map((r) => ({ label: label(r), value: r.samples_per_sec, text: `${formatSig(r.samples_per_sec)} samples/s`, tone: r === every ? 'warn' : 'accent' })), { summary, max: Math.max(...runs.map((r) => r.samples_per_sec)) * 1.05 }),
    verdict ? finding(verdict.text, verdict.tone) : null,
    dataTable({
      caption: 'The two runs (same model, batch and steps)',
      columns: [{ label: 'Loss read' }, { label: 'Reads', numeric: true }, { label: 'Step time, median (min–max)', numeric: true }, { label: 'Samples/s', numeric: true }],
      rows: runs.map((r) => [label(r), formatInt(r.loss_reads), formatSpread(r.step_ms, formatMs), formatSig(r.samples_per_sec)]),
    }),
    ceilingView('break-it', result),
    provenanceDetails(result.provenance),
  );
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'break-it');
  const kase = CASES[params.case] ? params.case : spec.defaults.case;
  standardPanel(figure, device, {
    experiment: 'break-it',
    fixed: { case: kase },
    intro: CASES[kase].intro,
    fields: [],
    runLabel: CASES[kase].runLabel,
    resultsSize: kase === 'batch-on-host' ? 'list' : 'bars',
    onRun: async (_values, { status, results }) => {
      const result = await runJob({ url: spec.path, body: { case: kase }, status, device, results });
      if (!result) return;
      if (result.case === 'log-every-step') renderLogging(results, result);
      else renderPlacement(results, result);
    },
  });
}
