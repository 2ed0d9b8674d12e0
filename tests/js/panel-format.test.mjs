// Unit tests for the experiment panels' number formatting (web/static/js/logic/panel-format.js):
// the units a student reads under every live measurement.
import { test } from 'node:test';
import { clampInt } from '../../web/static/js/logic/numbers.js';
import assert from 'node:assert/strict';
import {
  formatSig, formatInt, formatBytes, formatGbps, formatMs, formatFlops, formatPercent,
  formatTimes, formatSpread, formatError, powerOfTwoSteps, largestStepAtMost,
} from '../../web/static/js/logic/panel-format.js';

test('significant digits drop trailing zeros and group thousands', () => {
  assert.equal(formatSig(31.14828897), '31.1');
  assert.equal(formatSig(0.001713), '0.00171');
  assert.equal(formatSig(81210.54), '81,211');
  assert.equal(formatSig(2.5), '2.5');
  assert.equal(formatSig(0), '0');
  assert.equal(formatSig(3.2e-7), '3.2e-7');
  assert.equal(formatSig(null), '—');
  assert.equal(formatSig(NaN), '—');
  assert.equal(formatInt(4096), '4,096');
});

test('bytes use binary units like PyTorch and nvidia-smi', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1024), '1 KiB');
  assert.equal(formatBytes(64 * 1024 * 1024), '64 MiB');
  assert.equal(formatBytes(1 << 30), '1 GiB');
  assert.equal(formatBytes(1500), '1.46 KiB');
  assert.equal(formatBytes(-2 * 1024 * 1024), '−2 MiB');
  assert.equal(formatBytes(undefined), '—');
});

test('times pick a readable unit', () => {
  assert.equal(formatMs(40.59), '40.6 ms');
  assert.equal(formatMs(0.394), '394 µs');
  assert.equal(formatMs(0.0017), '1.7 µs');
  assert.equal(formatMs(1234), '1.23 s');
  assert.equal(formatMs(0.0000005), '0.5 ns');
  assert.equal(formatMs(0), '0 ms');
});

test('rates, ratios and spreads', () => {
  assert.equal(formatGbps(24.51), '24.5 GB/s');
  assert.equal(formatFlops(2.5e12), '2.5 TFLOP/s');
  assert.equal(formatFlops(8.2e9), '8.2 GFLOP/s');
  assert.equal(formatFlops(4e5), '400,000 FLOP/s');
  assert.equal(formatPercent(0.88134), '88.1%');
  assert.equal(formatTimes(205.17), '205×');
  assert.equal(formatTimes(1.43), '1.4×');
  assert.equal(formatSpread({ median: 2, min: 1, max: 3.25 }), '2 (1–3.25)');
  assert.equal(formatSpread(null), '—');
  assert.equal(formatError(3.2e-7), '3.2e−7');
  assert.equal(formatError(0.0123), '0.0123');
  assert.equal(formatError(0), '0');
});

test('clamping and size steps stay inside the server caps', () => {
  assert.equal(clampInt('5000', { min: 1, max: 4096 }), 4096);
  assert.equal(clampInt(-3, { min: 1, max: 10 }), 1);
  assert.equal(clampInt('abc', { min: 1, max: 10 }, 7), 7);
  assert.equal(clampInt('', { min: 1, max: 10 }, 70), 10, 'the fallback is kept in range too');
  assert.equal(clampInt(3.6, { min: 1, max: 10 }), 4);
  assert.deepEqual(powerOfTwoSteps(16, 128), [16, 32, 64, 128]);
  assert.deepEqual(powerOfTwoSteps(1024, 10000), [1024, 2048, 4096, 8192, 10000]);
  assert.deepEqual(powerOfTwoSteps(1000, 4096), [1024, 2048, 4096]);
  assert.deepEqual(powerOfTwoSteps(10, 5), []);
  assert.equal(largestStepAtMost([16, 32, 64, 128], 100), 64);
  assert.equal(largestStepAtMost([16, 32], 4), 16);
});
