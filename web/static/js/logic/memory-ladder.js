// Memory ladder, the data and the scale: the levels of memory a GPU kernel can read, with
// A100-class latency and size, and the log-scale arithmetic that places them on a bar.
// No DOM here, so node's test runner checks the figures the widget
// (widgets/memory-ladder.js) draws.
//
// Figures follow lesson 2's table and the server's fallback table: latencies measured on
// an A100 with dependent-load chains (Abdelkhalik et al., arXiv:2208.11174, 2022) —
// a dependent FP32 multiply-add ~4 cycles, shared memory ~23 (L1 hit ~33), L2 ~200, HBM
// ~290 — and NVIDIA's sizes (192 KiB per SM, up to 164 KiB shared; 40 MiB L2; 80 GB at
// 2,039 GB/s). The host rung is an order of magnitude: a trip across PCIe takes around a
// microsecond, over a thousand GPU cycles.

/** The A100's boost clock, for turning cycles into nanoseconds. */
export const CLOCK_GHZ = 1.41;

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * The rungs, fastest first. `sizeBytes` and `latencyCycles` are what the bars plot;
 * `sizeShort` is written on the size bar, `sizeText` in the details.
 */
export const RUNGS = [
  {
    id: 'registers',
    name: 'Registers',
    latencyCycles: 4,
    latencyText: 'part of the instruction; a dependent FMA ~4 cycles',
    sizeBytes: 256 * KIB,
    sizeShort: '256 KiB per SM',
    sizeText: '256 KiB per SM (65,536 registers of 32 bits)',
    scope: 'one thread',
    detail:
      'Each thread keeps its working variables here; a thread can use at most 255 registers (1,020 bytes). ' +
      'Per SM the register file is larger than shared memory, but it is split among the threads, and no thread can read another’s.',
  },
  {
    id: 'shared',
    name: 'Shared memory / L1',
    latencyCycles: 23,
    latencyText: '~23 cycles (an L1 hit ~33)',
    sizeBytes: 192 * KIB,
    sizeShort: '192 KiB per SM',
    sizeText: '192 KiB per SM, up to 164 KiB of it as shared memory',
    scope: 'the threads of one block',
    detail:
      'On-chip memory next to the cores. A block uses it to share data between its threads; the rest acts as the L1 cache. ' +
      'The data sheet writes “192 KB” and means KiB.',
  },
  {
    id: 'l2',
    name: 'L2 cache',
    latencyCycles: 200,
    latencyText: '~200 cycles',
    sizeBytes: 40 * MIB,
    sizeShort: '40 MiB',
    sizeText: '40 MiB for the whole chip (the data sheet’s “40 MB”)',
    scope: 'all SMs',
    detail:
      'Every read from device memory passes through L2, which all SMs share. Data that fits here is much cheaper to read a second time.',
  },
  {
    id: 'hbm',
    name: 'HBM (global memory)',
    latencyCycles: 290,
    latencyText: '~290 cycles',
    sizeBytes: 80e9,
    sizeShort: '80 GB',
    sizeText: '80 GB at about 2 TB/s (2,039 GB/s)',
    scope: 'all SMs; the host normally by copying (managed memory and Grace Hopper aside)',
    detail:
      'Where your tensors live: weights, activations, gradients and optimizer state. Big, but hundreds of cycles away; ' +
      'the GPU hides the wait by switching to other warps. Element-wise and normalisation operations are limited by this bandwidth.',
  },
  {
    id: 'host',
    name: 'Host memory over PCIe',
    latencyCycles: 1410,
    latencyText: 'around 1 µs, over 1,000 cycles',
    sizeBytes: 256e9,
    sizeShort: 'e.g. 256 GB',
    sizeText: 'the machine’s RAM (the bar shows 256 GB as an example); PCIe 4.0 x16 moves about 32 GB/s',
    scope: 'the CPU; the GPU only across the bus',
    detail:
      'Your CPU tensors and dataset live here. PyTorch’s GPU operations cannot use them until they are copied across PCIe, ' +
      'which at about 32 GB/s is some 64 times slower than HBM’s 2,039 GB/s. Move data once, then compute many times.',
  },
];

/** The bars' log scales: latency from 0.5 cycle to 10,000; size from 10 kB to 1 TB. */
export const AXES = {
  latency: { min: 0.5, max: 10000, ticks: [1, 10, 100, 1000, 10000] },
  size: { min: 1e4, max: 1e12, ticks: [1e4, 1e6, 1e8, 1e10, 1e12] },
};

/** Where `value` sits between `min` and `max` on a log scale, as a fraction 0 … 1. */
export function logFraction(value, min, max) {
  const f = Math.log10(value / min) / Math.log10(max / min);
  return Math.min(1, Math.max(0, f));
}

/** Cycles to nanoseconds at the given clock. */
export function cyclesToNanoseconds(cycles, ghz = CLOCK_GHZ) {
  return cycles / ghz;
}

/** How many times a register operation's latency this rung's is, to one decimal. */
export function timesRegisterLatency(rung) {
  return Math.round((rung.latencyCycles / RUNGS[0].latencyCycles) * 10) / 10;
}

/** Nanoseconds as the page prints them: one decimal below 10 ns, else whole. */
export function formatNanoseconds(ns) {
  if (ns < 10) return `${ns.toFixed(1)} ns`;
  return `${Math.round(ns).toLocaleString('en-US')} ns`;
}

/** A tick label for the latency axis, short enough for a phone: 1, 10, 100, 1k, 10k. */
export function cyclesLabel(cycles) {
  return cycles >= 1000 ? `${cycles / 1000}k` : String(cycles);
}

/** A tick label for the size axis, in decimal units (10 kB … 1 TB). */
export function bytesLabel(bytes) {
  const units = [
    [1e12, 'TB'],
    [1e9, 'GB'],
    [1e6, 'MB'],
    [1e3, 'kB'],
  ];
  for (const [scale, unit] of units) {
    if (bytes >= scale) return `${(bytes / scale).toLocaleString('en-US')} ${unit}`;
  }
  return `${bytes} B`;
}
