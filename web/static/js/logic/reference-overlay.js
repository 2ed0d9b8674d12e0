// "What a GPU shows": the reference results a panel on the CPU backend shows beside its
// own run, picked from GET /api/reference-runs (content/reference-runs/*.json) for one
// experiment. Published figures keep their label ("published peak, not measured") and
// their source; recorded GPU Lab runs keep their device, driver, CUDA, date and version,
// show the value a learner predicts as that GPU measured it, and each figure with its
// spread. A test fixture (made on the CPU by the GPU chain) says it is not a GPU. A
// learner's own run (uploaded on the About page, GET /api/me/gpu-runs, marked `own` by
// the loader) is labelled as theirs: "What your Tesla T4 measured, <date>". When
// nothing applies, the text says so instead of inventing a number.
// Pure: tests/js/reference-overlay.test.mjs.

import { formatSig } from './panel-format.js';

const METRIC_WORDS = {
  pcie_gbps: 'host↔GPU link (PCIe)',
  nvlink_gbps: 'GPU↔GPU link (NVLink)',
  memory_gbps: 'GPU memory bandwidth',
  fp32_tflops: 'FP32 arithmetic',
  bf16_tflops: 'BF16 on tensor cores',
};

/** A date from Unix seconds as YYYY-MM-DD (UTC). */
export function isoDate(unix) {
  return Number.isFinite(unix) ? new Date(unix * 1000).toISOString().slice(0, 10) : 'unknown date';
}

const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);
const isSummary = (v) => v && typeof v === 'object' && isNumber(v.median) && isNumber(v.min) && isNumber(v.max);

/**
 * The top-level figures of a recorded `result`, as "name: value" strings (at most `max`):
 * plain numbers, and summaries as "median (min–max)" so the spread travels with them.
 */
export function headlineNumbers(result, max = 4) {
  return Object.entries(result || {})
    .filter(([k, v]) => k !== 'measured' && (isNumber(v) || isSummary(v)))
    .slice(0, max)
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${isSummary(v) ? `${formatSig(v.median)} (${formatSig(v.min)}–${formatSig(v.max)})` : formatSig(v)}`);
}

/**
 * "What <device> measured (recorded run, <date>)", a learner's own "What your <device>
 * measured, <date>", or a fixture's own warning.
 */
export function runLabel(run) {
  if (run.fixture) return `Test fixture from GPU Lab's CPU chain on ${run.device}: not a GPU`;
  if (run.own) return `What your ${run.device} measured, ${isoDate(run.recorded_at_unix)}`;
  return `What ${run.device} measured (recorded run, ${isoDate(run.recorded_at_unix)})`;
}

/** The learner's runs (GET /api/me/gpu-runs) as reference files marked as their own. */
export function ownRunFiles(runs) {
  return (runs || [])
    .filter((r) => r && r.file && r.file.kind === 'recorded' && r.file.recorded)
    .map((r) => ({ ...r.file, recorded: { ...r.file.recorded, own: true } }));
}

function runProvenance(run) {
  return [`driver ${run.driver_version}`, run.cuda_version && `CUDA ${run.cuda_version}`,
    isoDate(run.recorded_at_unix), `GPU Lab ${run.gpulab_version}`].filter(Boolean).join(', ');
}

/**
 * What each recorded run measured of `experiment`'s predicted quantity, for the reveal:
 * [{label, provenance, quantity, value, unit, sameQuestion, fixture}], where
 * `sameQuestion` says whether it is the quantity `key` the learner was asked.
 */
export function recordedMeasurements(files, experiment, key) {
  const out = [];
  for (const file of files || []) {
    const run = file.kind === 'recorded' && file.recorded;
    const entry = run && (run.experiments || []).find((e) => e.name === experiment);
    const measured = entry && entry.result && entry.result.measured;
    if (!measured || !isNumber(measured.value)) continue;
    out.push({
      label: runLabel(run),
      provenance: runProvenance(run),
      quantity: measured.quantity,
      value: measured.value,
      unit: measured.unit || '',
      sameQuestion: measured.quantity === key,
      fixture: Boolean(run.fixture),
      own: Boolean(run.own),
    });
  }
  return out;
}

/**
 * The overlay for `experiment` from the reference `files`: {heading, published: [{label,
 * value, detail, source: {title, url}}], recorded: [{label, provenance, numbers}],
 * empty: sentence or null}.
 */
export function referenceOverlay(files, experiment) {
  const published = [];
  const recorded = [];
  for (const file of files || []) {
    if (file.kind === 'published') {
      for (const f of file.figures || []) {
        if (!(f.experiments || []).includes(experiment)) continue;
        published.push({
          label: `${f.device}: ${METRIC_WORDS[f.metric] || f.metric}`,
          value: `${formatSig(f.value)} ${f.unit}`,
          detail: `Published peak, not measured. ${f.detail || ''}`.trim(),
          source: f.source,
        });
      }
    } else if (file.kind === 'recorded' && file.recorded) {
      const run = file.recorded;
      const entry = (run.experiments || []).find((e) => e.name === experiment);
      if (!entry || !entry.result) continue;
      const measured = entry.result.measured;
      recorded.push({
        label: runLabel(run),
        provenance: runProvenance(run),
        fixture: Boolean(run.fixture),
        own: Boolean(run.own),
        numbers: [
          ...(measured && isNumber(measured.value) ? [`${measured.quantity}: ${formatSig(measured.value)}${measured.unit ? ` ${measured.unit}` : ''}`] : []),
          ...headlineNumbers(entry.result),
        ],
      });
    }
  }
  const empty = published.length || recorded.length
    ? null
    : 'No GPU run of this experiment has been recorded for this course yet, and NVIDIA publishes no figure that it measures, so there is nothing honest to show here. An instructor can add a run from a GPU with `gpulab reference import`.';
  return { heading: 'What a GPU shows (reference, not this server)', published, recorded, empty };
}
