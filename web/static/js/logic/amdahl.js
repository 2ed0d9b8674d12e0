// Amdahl's law, the arithmetic: the speedup S = 1 / ((1 − p) + p / N) of a job whose
// fraction p runs in parallel on N workers, its ceiling 1 / (1 − p), the worked steps the
// widget prints, the stops of its core-count slider and the curve it draws on a log axis.
// No DOM here, so node's test runner checks the same numbers the server's fallback table
// shows (server/course/fallbacks.rs: amdahl_speedup, the N column, "{:.2}×" and "{:.1}×").

import { thousands } from './numbers.js';

/** The core counts in the server's no-JavaScript table, in the same order. */
export const TABLE_CORE_COUNTS = [1, 2, 8, 64, 1024, 10000];

/** Largest core count the exact-value box accepts. */
export const MAX_CORES = 1000000;

/**
 * The core counts the slider steps through, left to right: powers of two plus the counts
 * the lesson names (the i9's 24 cores, the A100's 6,912, the H100's 16,896, 10,000).
 * A list rather than a continuous log scale, so that dragging lands on exact values.
 */
export const SLIDER_CORE_COUNTS = [
  1, 2, 4, 8, 16, 24, 32, 64, 128, 256, 512, 1024, 2048, 4096, 6912, 10000, 16896, 32768,
  65536, 100000,
];
export const SLIDER_MAX_CORES = SLIDER_CORE_COUNTS[SLIDER_CORE_COUNTS.length - 1];

/** Speedup of a job whose fraction `p` runs in parallel on `n` workers. */
export function speedup(p, n) {
  return 1 / ((1 - p) + p / n);
}

/** The speedup as n grows without bound: 1 / (1 − p), or Infinity when p = 1. */
export function ceiling(p) {
  return p >= 1 ? Infinity : 1 / (1 - p);
}

/**
 * A speedup as the page (and the fallback table) prints it: two decimals. Given the
 * ceiling, it adds decimals where two would round a speedup up onto the ceiling, so the
 * page never shows "20.00×" for a speedup that stays below 20 (19.996× at 100,000 cores).
 */
export function formatSpeedup(s, limit = Infinity) {
  for (let digits = 2; digits < 6; digits += 1) {
    const text = s.toFixed(digits);
    if (s >= limit || Number(text) < limit) return `${text}×`;
  }
  return `${s.toFixed(6)}×`;
}

/** The ceiling as the fallback prints it: one decimal, or "no ceiling" for p = 1. */
export function formatCeiling(p) {
  const c = ceiling(p);
  return Number.isFinite(c) ? `${c.toFixed(1)}×` : 'no ceiling';
}

/** A plain decimal for the worked steps, without float noise (0.05, not 0.0500000004). */
export function plain(x, significant = 4) {
  return x.toLocaleString('en-US', { maximumSignificantDigits: significant, useGrouping: false });
}

/** The formula with p and N substituted, step by step, as lines of text. */
export function workedSteps(p, n) {
  const serial = 1 - p;
  const share = p / n;
  const s = speedup(p, n);
  // "=" where the printed decimals are exact, "≈" where they were rounded.
  const sign = (...xs) => (xs.every((x) => Number(plain(x)) === x) ? '=' : '≈');
  return [
    `S = 1 / ((1 − ${plain(p)}) + ${plain(p)} / ${thousands(n)})`,
    `  ${sign(serial, share)} 1 / (${plain(serial)} + ${plain(share)})`,
    `  ${sign(serial, share, serial + share)} 1 / ${plain(serial + share)}`,
    `  ≈ ${formatSpeedup(s, ceiling(p))}`,
  ];
}

/** The rows of the table: [N, S] for the fallback's core counts. */
export function table(p) {
  return TABLE_CORE_COUNTS.map((n) => ({ n, s: speedup(p, n) }));
}

/** What fraction of its ceiling the speedup reaches (1 when there is no ceiling). */
export function shareOfCeiling(p, n) {
  const c = ceiling(p);
  return Number.isFinite(c) ? speedup(p, n) / c : speedup(p, n) / n;
}

/** Slider position (0 … SLIDER_CORE_COUNTS.length − 1) to a core count. */
export function sliderToCores(position) {
  const i = Math.min(SLIDER_CORE_COUNTS.length - 1, Math.max(0, Math.round(position)));
  return SLIDER_CORE_COUNTS[i];
}

/** A core count to the slider position nearest to it on a log scale. */
export function coresToSlider(n) {
  const distance = (count) => Math.abs(Math.log(count) - Math.log(Math.max(1, n)));
  let best = 0;
  SLIDER_CORE_COUNTS.forEach((count, i) => {
    if (distance(count) < distance(SLIDER_CORE_COUNTS[best])) best = i;
  });
  return best;
}

/** Points (log10 N, S) of the curve from N = 1 to `maxCores`, for drawing. */
export function curve(p, maxCores = SLIDER_MAX_CORES, count = 120) {
  const top = Math.log10(maxCores);
  const points = [];
  for (let i = 0; i <= count; i += 1) {
    const x = (top * i) / count;
    points.push({ x, s: speedup(p, 10 ** x) });
  }
  return points;
}

/** A round number at or above `y` for the top of the chart's axis (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k). */
export function niceTop(y) {
  if (!(y > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(y));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    if (step * power >= y - 1e-9) return step * power;
  }
  return 10 * power;
}

/** Reads a number from a form value, clamped to [min, max]; NaN gives `fallback`. */
export function clampNumber(value, min, max, fallback) {
  const n = Number(value);
  if (value === '' || value === null || !Number.isFinite(n)) return fallback;
  return Math.min(max, Math.max(min, n));
}
