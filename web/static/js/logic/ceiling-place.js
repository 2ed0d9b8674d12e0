// Where a result sits against this device's own ceilings, the figures the server
// measured once at start-up (server/experiments/ceilings.rs, in GET /api/device as
// `ceilings`): "this copy ran at 93% of this device's ceiling for Host→device copy,
// pinned (54 of the 58 GB/s measured at start-up; datasheet 64)", then what being near
// it, far below it or in between means for that experiment. Where no ceiling describes
// what an experiment measures (the timing trap's clocks, a thread hand-off on the CPU),
// the answer is a note saying why instead of an invented comparison. Pure functions, no
// DOM, so tests/js/ceiling-place.test.mjs runs them under node; panel-ceiling.js puts
// the sentences under a panel's figures.

import { formatBytes, formatSig } from './panel-format.js';

/** At or above this share of its ceiling a point is "near" it (GPU Lab's choice). */
export const NEAR = 0.8;
/** Below this share a point is "far below" it (GPU Lab's choice). */
export const FAR = 0.3;
/** Above this share a point beat the start-up figure (noise is a few per cent). */
export const ABOVE = 1.1;

/** What each band means when an experiment has nothing more specific to say. */
const MEANING = {
  near: 'Near its ceiling: this is what the hardware gives; only less work or other hardware goes faster.',
  between: 'Between: part of the time is the hardware limit, part is overhead around it.',
  far: 'Far below its ceiling: overhead (launches, small sizes, copies, waiting) costs more here than the hardware limit does.',
  above: 'Above the start-up figure: this run did something the calibration did not (several copies at once, data already in a cache), so that ceiling does not bound it.',
};

/** The ceiling named `key`, or null. */
export function ceilingOf(ceilings, key) {
  const figures = ceilings && Array.isArray(ceilings.figures) ? ceilings.figures : [];
  return figures.find((c) => c.key === key) || null;
}

/**
 * One sentence (and its tone) for `value` (in the ceiling's unit) measured by `what`;
 * `meaning` may replace the near/between/far/above explanations for one experiment.
 */
export function placement(what, value, ceiling, meaning = {}) {
  if (!ceiling || !(ceiling.value > 0) || !(value > 0)) return null;
  const say = { ...MEANING, ...meaning };
  const share = value / ceiling.value;
  // Whole per cents, except below 10% where 0.4% should not read as 0%.
  const pct = share >= 0.1 ? Math.round(share * 100) : formatSig(share * 100, 1);
  const datasheet = ceiling.datasheet > 0 ? `; datasheet ${formatSig(ceiling.datasheet)}` : '';
  const text = `${what} ran at ${pct}% of this device's ceiling for ${ceiling.label} (${formatSig(value)} of the ${formatSig(ceiling.value)} ${ceiling.unit} measured at start-up${datasheet}).`;
  const [band, tone] = share > ABOVE ? ['above', 'info'] : share >= NEAR ? ['near', 'good'] : share < FAR ? ['far', 'warn'] : ['between', 'info'];
  return { share, band, text: `${text} ${say[band]}`, tone };
}

/** A note for a result no ceiling describes: why nothing is placed. */
const note = (text) => ({ share: null, band: 'none', text, tone: 'info' });

/** Whether `result` ran on the CPU: its provenance says, else its trace, else the ceilings. */
export function ranOnCpu(result, ceilings) {
  const prov = result && result.provenance && result.provenance.backend;
  if (prov) return prov === 'cpu';
  const trace = result && result.trace && result.trace.otherData && result.trace.otherData.backend;
  if (trace) return trace === 'cpu';
  return Boolean(ceilings && ceilings.backend === 'cpu');
}

/** FLOPs of one training step's GEMMs (server/experiments/training/model.rs): forward
 * x·W1 and a1·W2, backward dW2, da1 and dW1 — 4·b·F·h + 6·b·h·C. */
export function trainingStepFlop(params, setup) {
  const [b, h, f, c] = [params.batch, params.hidden, setup.features, setup.classes];
  return 4 * b * f * h + 6 * b * h * c;
}

const largest = (points) => points.reduce((best, p) => (!best || p.bytes > best.bytes ? p : best), null);
const gbps = (bytes, ms) => bytes / (ms / 1e3) / 1e9;

function transfer(result, add) {
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
}

function matmul(result, add) {
  const rows = result.rows || [];
  const gpu = [...rows].reverse().find((r) => r.gpu_ms);
  const cpu = [...rows].reverse().find((r) => r.cpu_ms);
  if (gpu) add(`The ${gpu.size} × ${gpu.size} GPU product`, gpu.flop / (gpu.gpu_ms.median / 1e3) / 1e12, 'gemm_fp32');
  if (cpu) add(`The ${cpu.size} × ${cpu.size} CPU product`, cpu.flop / (cpu.cpu_ms.median / 1e3) / 1e12, 'sgemm');
}

function precision(result, add, ceilings) {
  for (const row of result.rows || []) {
    if (row.emulated) continue;
    const key = ceilingOf(ceilings, `gemm_${row.precision}`) ? `gemm_${row.precision}` : 'sgemm';
    add(`The ${row.precision.toUpperCase()} product`, row.tflops, key);
  }
}

function timing(result, _add, _ceilings, out) {
  out.push(note(`No ceiling applies here: the timing trap asks when each clock stops, not how fast work runs. Its kernels are sized by time (about ${formatSig(result.kernel_ms)} ms each, calibrated), not by bytes or FLOPs, so there is no throughput to set against this device's copy, memory or GEMM ceilings.`));
}

function launch(result, add, ceilings, out) {
  const points = result.points || [];
  const longest = points[points.length - 1];
  const eager = longest && longest.ways.find((w) => w.way === 'eager');
  if (!eager) return;
  const bytes = result.elements * 4;
  if (ranOnCpu(result, ceilings)) {
    out.push(note(`No ceiling applies on the CPU stand-in: each step's ${formatBytes(bytes)} stays in the processor's cache, and what this measures is handing a task to another thread, which neither the memcpy nor the SGEMM ceiling describes.`));
    return;
  }
  // Each eager step reads and writes every element once: 2 × 4 bytes per element.
  add(`The ${longest.kernels}-step eager chain`, gbps(2 * bytes * longest.kernels, eager.device_us.median / 1e3), 'd2d', {
    near: 'Near its ceiling: the steps are large enough that moving their data, not launching them, sets the time; graphs and fusion save little here.',
    far: `Far below its ceiling: each step touches only ${formatBytes(bytes)}, which this memory moves in a fraction of a microsecond, so the launches and the gaps between kernels set the time. That cost is what the graph replay and the fused kernel remove.`,
    between: 'Between: launch gaps and moving data both cost time here; larger steps would lean on memory, and a graph or fusion would cut the launch part.',
  });
}

function streams(result, add, ceilings, out) {
  const cpu = ranOnCpu(result, ceilings);
  const chunk = `One ${formatBytes(result.chunk_bytes)} chunk's copy in, measured alone,`;
  const alone = { far: 'Far below its ceiling: a chunk this small does not reach the link\'s plateau (the transfer experiment shows where it levels off), so larger chunks would copy faster.' };
  if (cpu) {
    add(chunk, gbps(result.chunk_bytes, result.copy_ms), 'memcpy', alone);
    out.push(note('The pipeline as a whole is not placed on the CPU stand-in: its threads copy side by side, and the memcpy ceiling is one copy on one core.'));
    return;
  }
  add(chunk, gbps(result.chunk_bytes, result.copy_ms), 'h2d_pinned', alone);
  const pinned = (result.runs || []).filter((r) => r.memory === 'pinned');
  const one = pinned.find((r) => r.streams === 1);
  const best = pinned.filter((r) => r.streams > 1).reduce((a, r) => (!a || r.total_ms.median < a.total_ms.median ? r : a), null);
  const total = result.chunks * result.chunk_bytes;
  const pipeline = {
    near: 'Near its ceiling: the copy engine was busy almost the whole run, so the pipeline is bound by the link; more streams cannot help, only less data (or keeping it on the device) would.',
    between: 'Between: the link sat idle for part of the run, waiting on compute or on steps that did not overlap.',
    far: 'Far below its ceiling: the link sat idle most of the run, because copies waited for compute and for each other instead of overlapping.',
  };
  if (one) add('The whole pipeline on one stream moved its input', gbps(total, one.total_ms.median), 'h2d_pinned', pipeline);
  if (best) add(`The whole pipeline on ${best.streams} streams moved its input`, gbps(total, best.total_ms.median), 'h2d_pinned', pipeline);
}

function training(result, add, ceilings) {
  if (!result.params || !result.setup || !result.step_ms) return;
  const flop = trainingStepFlop(result.params, result.setup);
  const key = ranOnCpu(result, ceilings) ? 'sgemm' : `gemm_${result.params.precision || 'fp32'}`;
  const { batch, hidden } = result.params;
  add(`Counting only its GEMMs (${formatSig(flop / 1e6)} MFLOP a step), the training step`, flop / (result.step_ms.median / 1e3) / 1e12, key, {
    near: 'Near its ceiling: the step is dominated by large matrix products running as fast as this device multiplies; only fewer FLOPs or faster hardware speed it up.',
    between: 'Between: the matrix products are a fair share of the step, and the rest (element-wise kernels, the optimiser, reading the loss) costs as much again.',
    far: `Far below its ceiling: with a batch of ${batch} and ${hidden} hidden units the products are too small to keep the device busy, and each step also pays launches, the optimiser and the loss read. A larger batch or hidden width moves it towards the ceiling; this is why real training uses big batches.`,
  });
}

function breakIt(result, _add, _ceilings, out) {
  if (result.case === 'log-every-step') {
    out.push(note('No ceiling is set against these two runs: they train the same steps and differ only in how often the loop waits for the device to hand back the loss. What a read costs is a wait (a sync and a four-byte copy), which no throughput ceiling describes; the training run places a step of this model against this device\'s GEMM ceiling.'));
  } else {
    out.push(note('No ceiling applies here: the run stops at its first step with an error, so nothing was copied or multiplied to set against this device\'s ceilings.'));
  }
}

function lab(_result, _add, _ceilings, out) {
  out.push(note('The lab is graded against its own slow loop, run in the same job, so no ceiling is needed to judge it. Where a step\'s time went is in the profile above; the training run places a step of this model against this device\'s GEMM ceiling.'));
}

const PLACERS = { transfer, matmul, precision, timing, launch, streams, training, 'break-it': breakIt, lab };

/** Sentences placing an experiment's result against the ceilings (or saying why none applies). */
export function placements(experiment, result, ceilings) {
  const placer = PLACERS[experiment];
  if (!result || !ceilings || !placer) return [];
  const out = [];
  const add = (what, value, key, meaning) => {
    const p = placement(what, value, ceilingOf(ceilings, key), meaning);
    if (p) out.push(p);
  };
  placer(result, add, ceilings, out);
  return out;
}
