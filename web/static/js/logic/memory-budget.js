// Memory budget logic (lessons 7 and 8): the bytes a training run needs for weights,
// gradients, optimizer state and activations, against one GPU's memory. Pure functions,
// no DOM, so the tests can hold the lessons' numbers: 16 bytes per parameter for FP32
// Adam, 14.90 GiB for a billion parameters (GiB = 2^30 bytes).
//
// The per-parameter terms agree with the server's fallback (fallbacks::bytes_per_param):
// autocast mixed precision keeps FP32 weights, gradients and optimizer state; pure 16-bit
// training stores all three in two-byte values. Lesson 8 adds, for autocast, the 16-bit
// copies of the weights made for the forward pass (up to 2 bytes per parameter), shown as
// their own term so the other three bars stay put when the precision changes.
//
// Activations are an estimate for a transformer layer (Korthikanti et al., 2022, without
// dropout masks): per layer, 16 hidden-sized values per token position (attention inputs,
// Q, K, V, outputs, two layer norms, the 4× wide feed-forward block) plus the attention
// scores and their softmax, 2 × heads × seq² values per sequence, with 64-wide heads.
//
// The OOM line is the memory a process can actually use, not the size on the box: the total
// the driver reports to PyTorch (torch.cuda.mem_get_info, the "total capacity" in PyTorch's
// out-of-memory message), minus about 0.5 GiB for the CUDA context that the first CUDA call
// creates. A "16 GB" T4 reports about 14.56 GiB; an "80 GB" A100 about 79.25 GiB. The
// reported totals below are taken from real PyTorch out-of-memory messages on each card
// (lesson 7 cites them); they move by a few hundred MiB with the driver and ECC setting.

export const GIB = 2 ** 30;

/** Bytes per stored value for each precision, and the activation width. */
export const PRECISIONS = {
  fp32: { label: 'FP32', weight: 4, gradient: 4, moment: 4, activation: 4, autocastCopy: 0 },
  'bf16-mixed': { label: 'BF16 mixed (autocast)', weight: 4, gradient: 4, moment: 4, activation: 2, autocastCopy: 2 },
  'fp16-mixed': { label: 'FP16 mixed (autocast + GradScaler)', weight: 4, gradient: 4, moment: 4, activation: 2, autocastCopy: 2 },
  bf16: { label: 'Pure BF16 (weights too)', weight: 2, gradient: 2, moment: 2, activation: 2, autocastCopy: 0 },
  fp16: { label: 'Pure FP16 (weights too)', weight: 2, gradient: 2, moment: 2, activation: 2, autocastCopy: 0 },
};

/** The precisions offered by default; pure FP16 only appears if a lesson asks for it. */
export const OFFERED_PRECISIONS = ['fp32', 'bf16-mixed', 'fp16-mixed', 'bf16'];

/** Moment tensors each optimizer keeps per parameter. */
export const OPTIMIZERS = {
  adam: { label: 'Adam', moments: 2 },
  adamw: { label: 'AdamW', moments: 2 },
  'sgd-momentum': { label: 'SGD with momentum', moments: 1 },
  sgd: { label: 'SGD (plain)', moments: 0 },
};

/**
 * About how much device memory the CUDA context takes before the first tensor: PyTorch's
 * maintainers measure roughly 0.3–0.4 GiB with lazy module loading (CUDA 11.7 and later);
 * 0.5 GiB is the cautious end of that range.
 */
export const CUDA_CONTEXT_GIB = 0.5;

/**
 * Cards to budget against. `gb` is the size on the box (decimal gigabytes); `reportedGiB` is
 * the total the driver reports to PyTorch on that card; `usableGiB` subtracts the context.
 */
export const GPUS = {
  't4-16gb': { label: 'NVIDIA T4 (16 GB)', gb: 16, reportedGiB: 14.56 },
  'rtx4090-24gb': { label: 'GeForce RTX 4090 (24 GB)', gb: 24, reportedGiB: 23.64 },
  'a100-40gb': { label: 'A100 40 GB (SXM4)', gb: 40, reportedGiB: 39.56 },
  'a100-80gb': { label: 'A100 80 GB', gb: 80, reportedGiB: 79.25 },
  'h100-80gb': { label: 'H100 80 GB (HBM3)', gb: 80, reportedGiB: 79.11 },
};
for (const gpu of Object.values(GPUS)) gpu.usableGiB = round2(gpu.reportedGiB - CUDA_CONTEXT_GIB);

function round2(x) {
  return Math.round(x * 100) / 100;
}

/** Width of one attention head; 768 hidden → 12 heads, as in the lesson. */
export const HEAD_DIM = 64;

/**
 * A GPU entry for `id`, inventing one from a "...-NNgb" suffix for unknown ids. An unknown
 * card is assumed to report its decimal gigabytes converted to GiB (NN × 10⁹ / 2³⁰), which
 * is cautious: HBM cards sold as "80 GB" report more than that.
 */
export function gpuFor(id) {
  if (GPUS[id]) return GPUS[id];
  const match = /(\d+)gb$/i.exec(id ?? '');
  if (match) {
    const gb = Number(match[1]);
    const reportedGiB = round2((gb * 1e9) / GIB);
    return { label: `${id} (${gb} GB)`, gb, reportedGiB, usableGiB: round2(reportedGiB - CUDA_CONTEXT_GIB) };
  }
  return GPUS['a100-80gb'];
}

/** Parameters in `layers` transformer layers of width `hidden`: 12 × layers × hidden² (Kaplan et al., 2020). */
export function layerParams(hidden, layers) {
  return 12 * layers * hidden * hidden;
}

/** Bytes per parameter for weights, gradients and optimizer state (as the fallback). */
export function bytesPerParam(precision, optimizer) {
  const p = PRECISIONS[precision] ?? PRECISIONS.fp32;
  const o = OPTIMIZERS[optimizer] ?? OPTIMIZERS.sgd;
  return { weights: p.weight, gradients: p.gradient, optimizer: o.moments * p.moment };
}

export function headsFor(hidden) {
  return Math.max(1, Math.round(hidden / HEAD_DIM));
}

/** Activation bytes kept for backward by `layers` transformer layers. */
export function activationBytes({ batch, seq, hidden, layers, bytesPerValue }) {
  const positions = batch * seq;
  const hiddenValues = 16 * positions * hidden;
  const attentionValues = 2 * headsFor(hidden) * batch * seq * seq;
  return layers * (hiddenValues + attentionValues) * bytesPerValue;
}

/**
 * The whole budget for one configuration. Every term is in bytes; `terms` lists them in
 * the order the bar stacks them, each with a key, a label and its bytes.
 */
export function budget(config) {
  const precision = PRECISIONS[config.precision] ?? PRECISIONS.fp32;
  const perParam = bytesPerParam(config.precision, config.optimizer);
  const params = config.params;
  const terms = [
    { key: 'weights', label: 'Weights', perParam: perParam.weights, bytes: params * perParam.weights },
    { key: 'gradients', label: 'Gradients', perParam: perParam.gradients, bytes: params * perParam.gradients },
    { key: 'optimizer', label: 'Optimizer state', perParam: perParam.optimizer, bytes: params * perParam.optimizer },
  ];
  if (precision.autocastCopy > 0) {
    terms.push({
      key: 'copies',
      label: '16-bit weight copies (autocast, up to)',
      perParam: precision.autocastCopy,
      bytes: params * precision.autocastCopy,
    });
  }
  terms.push({
    key: 'activations',
    label: 'Activations',
    perParam: null,
    bytes: activationBytes({ ...config, bytesPerValue: precision.activation }),
  });
  const floorBytes = params * (perParam.weights + perParam.gradients + perParam.optimizer);
  const totalBytes = terms.reduce((sum, t) => sum + t.bytes, 0);
  const gpu = gpuFor(config.gpu);
  const capacityBytes = gpu.usableGiB * GIB;
  return {
    terms,
    floorBytes,
    floorPerParam: perParam.weights + perParam.gradients + perParam.optimizer,
    totalBytes,
    gpu,
    reportedBytes: gpu.reportedGiB * GIB,
    contextBytes: CUDA_CONTEXT_GIB * GIB,
    capacityBytes,
    fits: totalBytes <= capacityBytes,
    spareBytes: capacityBytes - totalBytes,
  };
}

/** Round scale marks in GiB from 0 up to `topGiB`, about four intervals: 0, 20, 40, 60, 80. */
export function scaleTicks(topGiB) {
  const raw = topGiB / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const ticks = [];
  for (let i = 0; i * step <= topGiB + 1e-9; i += 1) ticks.push(Math.round(i * step * 1e6) / 1e6);
  return ticks;
}

/** 16e9 → "14.90 GiB". */
export function formatGiB(bytes) {
  return `${(bytes / GIB).toFixed(2)} GiB`;
}

/** 1e9 → "1.00 billion", 125e6 → "125.00 million", 5000 → "5,000". */
export function describeCount(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} billion`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} million`;
  return Math.round(n).toLocaleString('en-US');
}

/** The defaults of the lesson 7 directive, overridden by whatever the directive sets. */
export function configFromParams(params = {}) {
  const number = (key, fallback) => (Number.isFinite(Number(params[key])) && params[key] !== '' && params[key] != null ? Number(params[key]) : fallback);
  const text = (key, fallback) => (typeof params[key] === 'string' ? params[key] : fallback);
  return {
    params: number('params', 1e9),
    precision: text('precision', 'fp32'),
    optimizer: text('optimizer', 'adam'),
    batch: number('batch', 32),
    seq: number('seq', 128),
    hidden: number('hidden', 2048),
    layers: number('layers', 20),
    gpu: text('gpu', 'a100-80gb'),
  };
}
