// Unit tests for placing a result against this device's measured ceilings
// (web/static/js/logic/ceiling-place.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ceilingOf, placement, placements, trainingStepFlop, ranOnCpu, NEAR, FAR, ABOVE } from '../../web/static/js/logic/ceiling-place.js';

const ceiling = (key, value, unit, datasheet = null) => ({ key, label: `Figure ${key}`, unit, value, low: value * 0.9, high: value * 1.1, datasheet });
const gpu = { backend: 'gpu', figures: [ceiling('h2d_pinned', 58, 'GB/s', 64), ceiling('d2h_pinned', 50, 'GB/s', 64), ceiling('d2d', 2000, 'GB/s'), ceiling('gemm_fp32', 50, 'TFLOP/s'), ceiling('gemm_bf16', 600, 'TFLOP/s', 989)] };
const cpuCeilings = { backend: 'cpu', figures: [ceiling('memcpy', 10, 'GB/s'), ceiling('sgemm', 0.1, 'TFLOP/s')] };
const onGpu = { backend: 'cuda' };
const onCpu = { backend: 'cpu' };

test('a copy is placed as a share of its ceiling, with the datasheet beside it', () => {
  const p = placement('This copy', 54, ceilingOf(gpu, 'h2d_pinned'));
  assert.equal(Math.round(p.share * 100), 93);
  assert.match(p.text, /^This copy ran at 93% of this device's ceiling for Figure h2d_pinned \(54 of the 58 GB\/s measured at start-up; datasheet 64\)\./);
  assert.equal(p.tone, 'good', `at or above ${NEAR} is near`);
  assert.equal(placement('x', 10, ceilingOf(gpu, 'h2d_pinned')).tone, 'warn', `below ${FAR} is far`);
  assert.equal(placement('x', 30, ceilingOf(gpu, 'h2d_pinned')).tone, 'info');
  assert.match(placement('x', 30, ceilingOf(gpu, 'h2d_pinned')).text, /Between: /, 'the middle band says what it means too');
  const above = placement('x', 58 * (ABOVE + 0.1), ceilingOf(gpu, 'h2d_pinned'));
  assert.equal(above.band, 'above');
  assert.match(above.text, /does not bound it/, 'beating the start-up figure is not called "near"');
  assert.match(placement('x', 10, ceilingOf(gpu, 'h2d_pinned'), { far: 'Custom far.' }).text, /\)\. Custom far\.$/);
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
  assert.deepEqual(placements('allocator', {}, gpu), [], 'an experiment without a placer places nothing');
});

test('break-it and the labs say why no ceiling applies, each for its own reason', () => {
  for (const ceilings of [gpu, cpuCeilings]) {
    const [logging] = placements('break-it', { case: 'log-every-step', runs: [] }, ceilings);
    assert.equal(logging.share, null);
    assert.match(logging.text, /^No ceiling is set against these two runs: .*how often the loop waits/);
    const [placement] = placements('break-it', { case: 'batch-on-host', fields: [] }, ceilings);
    assert.match(placement.text, /stops at its first step with an error/);
    const [lab] = placements('lab', { verdict: 'pass' }, ceilings);
    assert.match(lab.text, /graded against its own slow loop/);
  }
});

test('timing says why no ceiling applies instead of inventing one', () => {
  for (const ceilings of [gpu, cpuCeilings]) {
    const out = placements('timing', { kernel_ms: 5.02, provenance: onGpu }, ceilings);
    assert.equal(out.length, 1);
    assert.equal(out[0].share, null);
    assert.match(out[0].text, /^No ceiling applies here: .*about 5\.02 ms each/);
  }
});

const way = (name, deviceUs) => ({ way: name, device_us: { median: deviceUs } });
const launchResult = (provenance, eagerUs) => ({
  elements: 4096,
  provenance,
  points: [{ kernels: 1, ways: [way('eager', 2)] }, { kernels: 1000, ways: [way('eager', eagerUs), way('graph', 1000), way('fused', 10)] }],
});

test('launch places the eager chain against device memory on the GPU, and says why not on the CPU', () => {
  // 1000 steps × 2 × 16 KiB in 4000 µs = 8.192 GB/s of a 2000 GB/s ceiling.
  const [far] = placements('launch', launchResult(onGpu, 4000), gpu);
  assert.match(far.text, /^The 1000-step eager chain ran at 0\.4% .*8\.19 of the 2,000 GB\/s/);
  assert.equal(far.tone, 'warn');
  assert.match(far.text, /each step touches only 16 KiB.*graph replay and the fused kernel remove/);
  const [near] = placements('launch', launchResult(onGpu, 16.384), gpu);
  assert.equal(near.band, 'near');
  assert.match(near.text, /moving their data, not launching them/);
  const cpu = placements('launch', launchResult(onCpu, 4000), cpuCeilings);
  assert.equal(cpu.length, 1);
  assert.match(cpu[0].text, /^No ceiling applies on the CPU stand-in: each step's 16 KiB stays in the processor's cache/);
  assert.deepEqual(placements('launch', { elements: 4, points: [] }, gpu), []);
});

const run = (streams, memory, median) => ({ streams, memory, total_ms: { median } });
const MiB = 1 << 20;

test('streams places one copy and the pipeline against the pinned host-to-device ceiling', () => {
  // 8 chunks of 8 MiB = 67.1 MB; one chunk's copy alone at 50 GB/s.
  const result = {
    provenance: onGpu, chunks: 8, chunk_bytes: 8 * MiB, copy_ms: 8 * MiB / 50e9 * 1e3,
    runs: [run(1, 'pinned', 8 * 3 * 8 * MiB / 50e9 * 1e3), run(2, 'pinned', 4), run(4, 'pinned', 8 * MiB * 8 / 55e9 * 1e3), run(4, 'pageable', 30)],
  };
  const out = placements('streams', result, gpu);
  assert.equal(out.length, 3);
  assert.match(out[0].text, /^One 8 MiB chunk's copy in, measured alone, ran at 86% of this device's ceiling for Figure h2d_pinned/);
  assert.match(out[1].text, /^The whole pipeline on one stream moved its input ran at 29%/);
  assert.match(out[1].text, /link sat idle most of the run/);
  assert.match(out[2].text, /^The whole pipeline on 4 streams moved its input ran at 95%/, 'the fastest multi-stream pinned run');
  assert.match(out[2].text, /more streams cannot help/);
  const cpu = placements('streams', { ...result, provenance: onCpu, copy_ms: 8 * MiB / 5e9 * 1e3 }, cpuCeilings);
  assert.equal(cpu.length, 2);
  assert.match(cpu[0].text, /ran at 50% of this device's ceiling for Figure memcpy \(5 of the 10 GB\/s/);
  assert.match(cpu[1].text, /not placed on the CPU stand-in/);
});

test('training places its GEMM FLOPs per step against the GEMM ceiling of its format', () => {
  const params = { batch: 32, hidden: 128, precision: 'fp32' };
  const setup = { features: 32, classes: 3 };
  assert.equal(trainingStepFlop(params, setup), 4 * 32 * 32 * 128 + 6 * 32 * 128 * 3);
  const flop = trainingStepFlop(params, setup);
  const result = { provenance: onGpu, params, setup, step_ms: { median: flop / 1e12 * 1e3 } }; // 1 TFLOP/s
  const [fp32] = placements('training', result, gpu);
  assert.match(fp32.text, /^Counting only its GEMMs \(0\.598 MFLOP a step\), the training step ran at 2% of this device's ceiling for Figure gemm_fp32/);
  assert.match(fp32.text, /batch of 32 and 128 hidden units/);
  const [bf16] = placements('training', { ...result, params: { ...params, precision: 'bf16' } }, gpu);
  assert.match(bf16.text, /ceiling for Figure gemm_bf16/);
  const [cpu] = placements('training', { ...result, provenance: onCpu, step_ms: { median: flop / 0.09e12 * 1e3 } }, cpuCeilings);
  assert.match(cpu.text, /ran at 90% of this device's ceiling for Figure sgemm/);
  assert.equal(cpu.tone, 'good');
});

test('the backend comes from the result before the ceilings', () => {
  assert.equal(ranOnCpu({ provenance: onCpu }, gpu), true);
  assert.equal(ranOnCpu({ trace: { otherData: { backend: 'cpu' } } }, gpu), true);
  assert.equal(ranOnCpu({}, cpuCeilings), true);
  assert.equal(ranOnCpu({ provenance: onGpu }, cpuCeilings), false);
});
