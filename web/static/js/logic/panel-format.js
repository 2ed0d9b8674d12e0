// Number formatting for the live-experiment panels (web/static/js/experiments/).
// Pure functions, no DOM, so tests/js/panel-format.test.mjs can check them under node.
// Conventions follow the server and the lessons: memory sizes in binary units (KiB, MiB,
// GiB, as PyTorch and nvidia-smi print them), bandwidth in GB/s with GB = 1e9 bytes (as
// the transfer benchmark measures it), times picked from ns / µs / ms / s so a reader
// never has to count zeros.

import { thousands } from './numbers.js';

const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `x` to `sig` significant digits, without trailing zeros; thousands grouped. */
export function formatSig(x, sig = 3) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const abs = Math.abs(x);
  if (abs >= 10 ** sig) {
    return Math.round(x).toLocaleString('en-US');
  }
  const rounded = Number(x.toPrecision(sig));
  // toPrecision keeps small numbers readable (0.00171); String() drops trailing zeros.
  if (abs < 1e-4) return rounded.toExponential(Math.max(0, sig - 1)).replace(/\.?0+e/, 'e');
  return String(rounded);
}

/** Whole numbers with thousands separators, or a dash when there is no number. */
export function formatInt(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return thousands(n);
}

/** Bytes in binary units: 1024 → "1 KiB", 67108864 → "64 MiB", 1500 → "1.46 KiB". */
export function formatBytes(bytes, sig = 3) {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BINARY_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const sign = bytes < 0 ? '−' : '';
  const shown = unit === 0 ? String(Math.round(value)) : formatSig(value, sig);
  return `${sign}${shown} ${BINARY_UNITS[unit]}`;
}

/** Bandwidth in GB/s (1e9 bytes per second). */
export function formatGbps(gbps) {
  return `${formatSig(gbps)} GB/s`;
}

/** A duration given in milliseconds, in the unit that reads best. */
export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const abs = Math.abs(ms);
  if (abs >= 1000) return `${formatSig(ms / 1000)} s`;
  if (abs >= 1) return `${formatSig(ms)} ms`;
  if (abs >= 1e-3) return `${formatSig(ms * 1e3)} µs`;
  if (abs === 0) return '0 ms';
  return `${formatSig(ms * 1e6)} ns`;
}

/** Floating-point rate in FLOP per second, with the prefix that reads best. */
export function formatFlops(flopPerSec) {
  if (flopPerSec === null || flopPerSec === undefined || !Number.isFinite(flopPerSec)) return '—';
  const prefixes = [
    [1e15, 'PFLOP/s'],
    [1e12, 'TFLOP/s'],
    [1e9, 'GFLOP/s'],
    [1e6, 'MFLOP/s'],
  ];
  for (const [scale, unit] of prefixes) {
    if (Math.abs(flopPerSec) >= scale) return `${formatSig(flopPerSec / scale)} ${unit}`;
  }
  return `${formatSig(flopPerSec)} FLOP/s`;
}

/** A fraction as a percentage: 0.8813 → "88.1%". */
export function formatPercent(fraction, sig = 3) {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '—';
  return `${formatSig(fraction * 100, sig)}%`;
}

/** A ratio as "205×". */
export function formatTimes(factor) {
  if (factor === null || factor === undefined || !Number.isFinite(factor)) return '—';
  return `${formatSig(factor, factor >= 10 ? 3 : 2)}×`;
}

/** A measurement summary {median,min,max} as "median (min–max)" with `format`. */
export function formatSpread(summary, format = formatSig) {
  if (!summary || !Number.isFinite(summary.median)) return '—';
  return `${format(summary.median)} (${format(summary.min)}–${format(summary.max)})`;
}

/** A small error magnitude: 3.2e-7 → "3.2e-7", 0.0123 → "0.0123", 0 → "0". */
export function formatError(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  if (Math.abs(x) < 1e-3 || Math.abs(x) >= 1e5) {
    return x.toExponential(1).replace('.0e', 'e').replace('e-', 'e−');
  }
  return formatSig(x);
}

/**
 * Powers of two from `min` to `max` (inclusive), plus `max` itself when it is not one,
 * for size pickers that must stay inside the server's cap.
 */
export function powerOfTwoSteps(min, max) {
  const steps = [];
  if (!(min > 0) || !(max >= min)) return steps;
  let size = 2 ** Math.ceil(Math.log2(min));
  while (size <= max) {
    steps.push(size);
    size *= 2;
  }
  if (steps[steps.length - 1] !== max) steps.push(max);
  return steps;
}

/** The largest entry of `steps` not above `target`, or the smallest entry. */
export function largestStepAtMost(steps, target) {
  let best = steps[0];
  for (const step of steps) if (step <= target) best = step;
  return best;
}
