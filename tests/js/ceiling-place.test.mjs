// Unit tests for placing a result against this device's measured ceilings
// (web/static/js/logic/ceiling-place.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ceilingOf, placement, placements, NEAR, FAR } from '../../web/static/js/logic/ceiling-place.js';

const ceiling = (key, value, unit, datasheet = null) => ({ key, label: `Figure ${key}`, unit, value, low: value * 0.9, high: value * 1.1, datasheet });
const gpu = { backend: 'gpu', figures: [ceiling('h2d_pinned', 58, 'GB/s', 64), ceiling('d2h_pinned', 50, 'GB/s', 64), ceiling('gemm_fp32', 50, 'TFLOP/s'), ceiling('gemm_bf16', 600, 'TFLOP/s', 989)] };

test('a copy is placed as a share of its ceiling, with the datasheet beside it', () => {
  const p = placement('This copy', 54, ceilingOf(gpu, 'h2d_pinned'));
  assert.equal(Math.round(p.share * 100), 93);
  assert.match(p.text, /^This copy ran at 93% of this device's ceiling for Figure h2d_pinned \(54 of the 58 GB\/s measured at start-up; datasheet 64\)\./);
  assert.equal(p.tone, 'good', `at or above ${NEAR} is near`);
  assert.equal(placement('x', 10, ceilingOf(gpu, 'h2d_pinned')).tone, 'warn', `below ${FAR} is far`);
  assert.equal(placement('x', 30, ceilingOf(gpu, 'h2d_pinned')).tone, 'info');
  assert.equal(placement('x', 30, null), null);
  assert.equal(placement('x', 0, ceilingOf(gpu, 'h2d_pinned')), null);
});

test('transfer places the largest copy of each way and memory', () => {
  const point = (direction, memory, bytes, median) => ({ direction, memory, bytes, gbps: { median } });
  const result = { points: [point('h2d', 'pinned', 1024, 1), point('h2d', 'pinned', 1 << 30, 29), point('d2h', 'pinned', 1 << 30, 50), point('h2d', 'pageable', 1 << 30, 20)] };
  const out = placements('transfer', result, gpu);
  assert.equal(out.length, 2, 'no ceiling measured for pageable here');
  assert.match(out[0].text, /^The largest Host→device \(pinned\) copy ran at 50%/);
  assert.match(out[1].text, /ran at 100%/);
});

test('matmul and precision place their products in TFLOP/s', () => {
  const rows = [{ size: 4096, flop: 2 * 4096 ** 3, gpu_ms: { median: 2 * 4096 ** 3 / 40e12 * 1e3 }, cpu_ms: null }];
  const [m] = placements('matmul', { rows }, gpu);
  assert.match(m.text, /^The 4096 × 4096 GPU product ran at 80%/);
  const precision = placements('precision', { rows: [{ precision: 'bf16', tflops: 300, emulated: false }, { precision: 'fp16', tflops: 5, emulated: true }] }, gpu);
  assert.equal(precision.length, 1, 'emulated formats are not placed');
  assert.match(precision[0].text, /^The BF16 product ran at 50% .*300 of the 600 TFLOP\/s measured at start-up; datasheet 989/);
  const cpu = { backend: 'cpu', figures: [ceiling('sgemm', 0.1, 'TFLOP/s')] };
  const [c] = placements('precision', { rows: [{ precision: 'fp32', tflops: 0.05, emulated: false }] }, cpu);
  assert.match(c.text, /ran at 50%/);
  assert.deepEqual(placements('streams', {}, gpu), []);
});
