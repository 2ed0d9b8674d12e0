// Where a result sits against this device's own ceilings, the figures the server
// measured once at start-up (server/experiments/ceilings.rs, in GET /api/device as
// `ceilings`): "this copy ran at 93% of this device's ceiling for Host→device copy,
// pinned (54 of the 58 GB/s measured at start-up; datasheet 64)". Pure functions, no DOM, so tests/js/ceiling-place.test.mjs runs them
// under node; panel-ceiling.js puts the sentences under a panel's figures.

import { formatSig } from './panel-format.js';

/** At or above this share of its ceiling a point is "near" it (GPU Lab's choice). */
export const NEAR = 0.8;
/** Below this share a point is "far below" it (GPU Lab's choice). */
export const FAR = 0.3;

/** The ceiling named `key`, or null. */
export function ceilingOf(ceilings, key) {
  const figures = ceilings && Array.isArray(ceilings.figures) ? ceilings.figures : [];
  return figures.find((c) => c.key === key) || null;
}

/** One sentence (and its tone) for `value` (in the ceiling's unit) measured by `what`. */
export function placement(what, value, ceiling) {
  if (!ceiling || !(ceiling.value > 0) || !(value > 0)) return null;
  const share = value / ceiling.value;
  const pct = Math.round(share * 100);
  const datasheet = ceiling.datasheet > 0 ? `; datasheet ${formatSig(ceiling.datasheet)}` : '';
  let text = `${what} ran at ${pct}% of this device's ceiling for ${ceiling.label} (${formatSig(value)} of the ${formatSig(ceiling.value)} ${ceiling.unit} measured at start-up${datasheet}).`;
  let tone = 'info';
  if (share >= NEAR) {
    text += ' Near its ceiling: this is what the hardware gives; only less work or other hardware goes faster.';
    tone = 'good';
  } else if (share < FAR) {
    text += ' Far below its ceiling: overhead (launches, small sizes, copies, waiting) costs more here than the hardware limit does.';
    tone = 'warn';
  }
  return { share, text, tone };
}

const largest = (points) => points.reduce((best, p) => (!best || p.bytes > best.bytes ? p : best), null);

/** Sentences placing an experiment's result against the ceilings, for the panels that have one. */
export function placements(experiment, result, ceilings) {
  if (!result || !ceilings) return [];
  const out = [];
  const add = (what, value, key) => {
    const p = placement(what, value, ceilingOf(ceilings, key));
    if (p) out.push(p);
  };
  if (experiment === 'transfer') {
    const names = { h2d: 'Host→device', d2h: 'Device→host', h2h: 'memcpy' };
    const groups = new Map();
    for (const p of result.points || []) {
      const key = p.direction === 'h2h' ? 'memcpy' : `${p.direction}_${p.memory}`;
      groups.set(key, [...(groups.get(key) || []), p]);
    }
    for (const [key, points] of groups) {
      const p = largest(points);
      const way = p.direction === 'h2h' ? names.h2h : `${names[p.direction]} (${p.memory})`;
      add(`The largest ${way} copy`, p.gbps && p.gbps.median, key);
    }
  } else if (experiment === 'matmul') {
    const rows = result.rows || [];
    const gpu = [...rows].reverse().find((r) => r.gpu_ms);
    const cpu = [...rows].reverse().find((r) => r.cpu_ms);
    if (gpu) add(`The ${gpu.size} × ${gpu.size} GPU product`, gpu.flop / (gpu.gpu_ms.median / 1e3) / 1e12, 'gemm_fp32');
    if (cpu) add(`The ${cpu.size} × ${cpu.size} CPU product`, cpu.flop / (cpu.cpu_ms.median / 1e3) / 1e12, 'sgemm');
  } else if (experiment === 'precision') {
    for (const row of result.rows || []) {
      if (row.emulated) continue;
      const key = ceilingOf(ceilings, `gemm_${row.precision}`) ? `gemm_${row.precision}` : 'sgemm';
      add(`The ${row.precision.toUpperCase()} product`, row.tflops, key);
    }
  }
  return out;
}
