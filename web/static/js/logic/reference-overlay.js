// "What a GPU shows": the reference results a panel on the CPU backend shows beside its
// own run, picked from GET /api/reference-runs (content/reference-runs/*.json) for one
// experiment. Published figures keep their label ("published peak, not measured") and
// their source; recorded GPU Lab runs keep their device, driver, date and version. When
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

/** The top-level numbers of a recorded `result`, as "name: value" strings (at most `max`). */
function headlineNumbers(result, max = 4) {
  return Object.entries(result || {})
    .filter(([, v]) => typeof v === 'number' && Number.isFinite(v))
    .slice(0, max)
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${formatSig(v)}`);
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
      recorded.push({
        label: `Measured by GPU Lab on ${run.device}`,
        provenance: `driver ${run.driver_version}, ${isoDate(run.recorded_at_unix)}, GPU Lab ${run.gpulab_version}`,
        numbers: headlineNumbers(entry.result),
      });
    }
  }
  const empty = published.length || recorded.length
    ? null
    : 'No GPU run of this experiment has been recorded for this course yet, and NVIDIA publishes no figure that it measures, so there is nothing honest to show here. An instructor can add a run from a GPU with `gpulab reference import`.';
  return { heading: 'What a GPU shows (reference, not this server)', published, recorded, empty };
}
