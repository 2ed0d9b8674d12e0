// Live experiment "tuning-lab" (issue 28): POST /api/experiments/lab runs one tuning lab.
// The directive names the lab and, as its other keys, the knobs the lab offers with the
// baseline's values; the panel shows those knobs, runs the baseline, your settings and
// the lab's reference interleaved on the server, and shows the grade: each criterion
// with its verdict (passed, not yet, inconclusive: run again, not graded here), the
// baseline's profile (where a step's time went), the knobs that do nothing on this
// backend, and the three settings' medians and spreads. Below, the job's trace: a lane
// per setting, each run with its steps, and "Download trace" (panel-trace.js).

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails,
  experimentSpec,
} from './panel.js';
import { formatInt, formatSig } from '../logic/panel-format.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';

const LABELS = {
  batch: 'Batch size',
  data_on_device: 'Keep the data on the device',
  pinned: 'Pinned host memory',
  non_blocking: 'Non-blocking copy, next batch prefetched',
  log_every: 'Read the loss every',
  timer_sync: 'Synchronise before the timer reads the clock',
  precision: 'Precision',
  optimizer: 'Optimizer',
  accumulation: 'Gradient accumulation (micro-batches)',
  recompute: 'Recompute layer 1 in the backward pass',
};

const TONE = { pass: 'good', fail: 'warn', inconclusive: 'warn', 'not-graded': 'plain' };
const WORD = { pass: 'passed', fail: 'not yet', inconclusive: 'inconclusive, run again', 'not-graded': 'not graded on this backend' };

function field(name, value, spec) {
  const label = LABELS[name] || name;
  if (typeof value === 'boolean') {
    return { name, label, type: 'select', value: String(value), options: [{ value: 'false', label: 'no' }, { value: 'true', label: 'yes' }] };
  }
  if (name === 'precision') return { name, label, type: 'select', value, options: [{ value: 'fp32', label: 'FP32' }, { value: 'bf16', label: 'BF16 (mixed)' }] };
  if (name === 'optimizer') return { name, label, type: 'select', value, options: [{ value: 'adam', label: 'Adam' }, { value: 'sgd', label: 'SGD' }] };
  const rule = spec.rules.find((r) => r.field === name && r.kind === 'range') || { min: 1, max: 1024 };
  return { name, label, type: 'number', min: rule.min, max: rule.max, value, hint: `${formatInt(rule.min)} to ${formatInt(rule.max)}` };
}

function render(results, r) {
  const p = r.baseline.profile;
  const fmt = (ms) => (Number.isFinite(ms) ? `${formatSig(ms)} ms` : 'not timed');
  showResults(results,
    el('div', { class: 'exp-lab-verdict' }, statList([
      { label: `${r.title} on ${r.backend === 'cuda' ? 'the GPU' : 'the CPU'}`, value: WORD[r.verdict] || r.verdict, hint: `score ${formatSig(r.score_percent)}%` },
    ])),
    ...r.criteria.map((c) => {
      const line = finding(`${c.name}: ${WORD[c.verdict] || c.verdict}. ${c.detail}.`, TONE[c.verdict] || 'plain');
      line.classList.add('exp-lab-criterion');
      return line;
    }),
    ...(r.inert || []).map((i) => finding(`${i.knob}: no effect on this backend (${i.why}); not graded here.`, 'plain')),
    dataTable({
      caption: 'Where the baseline\'s step time went (median over its runs)',
      columns: [{ label: 'Part' }, { label: 'Per step', numeric: true }],
      rows: [['Whole step', fmt(p.step_ms)], ['Staging and copying batches', fmt(p.copy_ms)], ['Waiting on the device', fmt(p.sync_wait_ms)], ['Forward and backward', fmt(p.compute_ms)], ['Optimizer', fmt(p.optimizer_ms)]],
    }),
    dataTable({
      caption: 'The three settings, run in turn in the same job',
      columns: [{ label: 'Setting' }, { label: 'Samples/s, median (Q1–Q3)', numeric: true }, { label: 'Final loss', numeric: true }, { label: 'Peak reserved (allocator model)', numeric: true }],
      rows: [['Baseline', r.baseline], ['Yours', r.candidate], ['Reference', r.reference]].map(([name, m]) => [
        name,
        `${formatSig(m.samples_per_sec.median)} (${formatSig(m.samples_per_sec.q1)}–${formatSig(m.samples_per_sec.q3)})`,
        formatSig(m.final_loss),
        `${formatSig(m.memory.peak_reserved / 1048576)} MiB`,
      ]),
    }),
    el('ul', { class: 'exp-lab-explanation' }, ...(r.explanation || []).map((t) => el('li', {}, t))),
    el('p', { class: 'exp-lab-knobs' }, 'Where each knob is taught: ', ...(r.knobs || []).flatMap((k, i) => [i ? ', ' : '', el('a', { href: k.lesson }, LABELS[k.knob] || k.knob)]), '.'),
    el('p', {}, 'Your best result in each lab, readable without JavaScript: ', el('a', { href: '/labs' }, 'the Labs page'), '.'),
    ceilingView('lab', r),
    traceView(r.trace, 'lab'),
    provenanceDetails(r.provenance),
  );
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'lab');
  const lab = params.lab || spec.defaults.lab;
  const knobs = Object.keys(params).filter((k) => k !== 'lab');
  standardPanel(figure, device, {
    intro: `Tuning lab: ${lab.replace(/-/g, ' ')}. Turn the knobs, then run and grade: the server runs the slow baseline, your settings and a known-good setting in turn and grades the medians with their spread.`,
    fixed: { lab },
    experiment: 'lab',
    fields: knobs.map((k) => field(k, params[k], spec)),
    runLabel: 'Run and grade',
    resultsSize: 'list',
    onRun: async (values, { status, results }) => {
      // The API takes every parameter; the lab reads only its own knobs from them.
      const body = { ...spec.defaults, lab };
      for (const k of knobs) {
        const v = values[k];
        body[k] = typeof params[k] === 'boolean' ? v === true || v === 'true' : v;
      }
      const result = await runJob({ url: spec.path, body, status, device, results });
      if (result) render(results, result);
    },
  });
}
