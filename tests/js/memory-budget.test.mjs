// Unit tests of the memory budget (lessons 7 and 8): 16 bytes per parameter for FP32
// Adam, 14.90 GiB for a billion parameters, the fallback's bytes per parameter, the
// activation estimate the calculator adds on top, and the OOM line at the memory a process
// can use (the total reported to PyTorch minus the CUDA context), not the size on the box.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CUDA_CONTEXT_GIB,
  GIB,
  GPUS,
  activationBytes,
  budget,
  bytesPerParam,
  configFromParams,
  describeCount,
  formatGiB,
  gpuFor,
  headsFor,
  layerParams,
  scaleTicks,
} from '../../web/static/js/logic/memory-budget.js';

// The lessons' directive: a billion parameters as 20 layers of width 2048 (12 × 20 × 2048² ≈ 1.01e9).
const lesson7 = configFromParams({ params: 1e9, precision: 'fp32', optimizer: 'adam', batch: 32, seq: 128, hidden: 2048, layers: 20, gpu: 'a100-80gb' });
const ticketShape = { batch: 32, seq: 128, hidden: 768, layers: 12 };

test('FP32 Adam: 4 + 4 + 8 = 16 bytes per parameter, 14.90 GiB for 1e9', () => {
  assert.deepEqual(bytesPerParam('fp32', 'adam'), { weights: 4, gradients: 4, optimizer: 8 });
  const b = budget(lesson7);
  assert.equal(b.floorPerParam, 16);
  assert.equal(b.floorBytes, 16e9);
  assert.equal(formatGiB(b.floorBytes), '14.90 GiB');
  assert.equal(GIB, 1_073_741_824);
  const byKey = Object.fromEntries(b.terms.map((t) => [t.key, t]));
  assert.equal(formatGiB(byKey.weights.bytes), '3.73 GiB');
  assert.equal(formatGiB(byKey.gradients.bytes), '3.73 GiB');
  assert.equal(formatGiB(byKey.optimizer.bytes), '7.45 GiB');
  assert.equal(byKey.copies, undefined);
});

test('bytes per parameter agree with the server fallback', () => {
  assert.deepEqual(bytesPerParam('bf16-mixed', 'adam'), { weights: 4, gradients: 4, optimizer: 8 });
  assert.deepEqual(bytesPerParam('bf16', 'sgd'), { weights: 2, gradients: 2, optimizer: 0 });
  assert.deepEqual(bytesPerParam('bf16', 'adam'), { weights: 2, gradients: 2, optimizer: 4 }); // lesson 8: 8 B
  assert.deepEqual(bytesPerParam('fp32', 'sgd'), { weights: 4, gradients: 4, optimizer: 0 }); // lesson 7: 8 B
  assert.deepEqual(bytesPerParam('fp32', 'sgd-momentum'), { weights: 4, gradients: 4, optimizer: 4 });
  assert.deepEqual(bytesPerParam('fp32', 'adamw'), { weights: 4, gradients: 4, optimizer: 8 });
});

test('activations: 16 hidden-sized values per position plus 2 × heads × seq² per sequence', () => {
  assert.equal(headsFor(768), 12);
  const fp32 = activationBytes({ batch: 32, seq: 128, hidden: 768, layers: 12, bytesPerValue: 4 });
  // per layer: 16 × 4096 × 768 × 4 = 201,326,592 B, attention 2 × 12 × 32 × 128² × 4 = 50,331,648 B
  assert.equal(fp32, 12 * (201_326_592 + 50_331_648));
  assert.equal(formatGiB(fp32), '2.81 GiB');
  // one attention score tensor (32, 12, 128, 128) in FP32 is the lesson's 25,165,824 bytes
  assert.equal(50_331_648 / 2, 25_165_824);
  // twice the batch, twice the activations; twice the sequence, more than twice
  const doubleBatch = activationBytes({ batch: 64, seq: 128, hidden: 768, layers: 12, bytesPerValue: 4 });
  assert.equal(doubleBatch, 2 * fp32);
  const doubleSeq = activationBytes({ batch: 32, seq: 256, hidden: 768, layers: 12, bytesPerValue: 4 });
  assert.ok(doubleSeq > 2 * fp32);
});

test('the directive shape matches its parameter count', () => {
  assert.equal(layerParams(2048, 20), 1_006_632_960);
  assert.equal(describeCount(layerParams(2048, 20)), '1.01 billion');
  assert.equal(describeCount(layerParams(768, 12)), '84.93 million');
  assert.deepEqual(configFromParams({}), { ...lesson7 });
});

test('lesson 7 defaults fit an A100 80 GB with 51.35 GiB to spare', () => {
  const b = budget(lesson7);
  const byKey = Object.fromEntries(b.terms.map((t) => [t.key, t]));
  // 20 × (16 × 4096 × 2048 + 2 × 32 × 32 × 128²) × 4 B = 13,421,772,800 B = 12.50 GiB
  assert.equal(byKey.activations.bytes, 13_421_772_800);
  assert.equal(formatGiB(b.totalBytes), '27.40 GiB');
  assert.equal(formatGiB(b.capacityBytes), '78.75 GiB');
  assert.equal(b.fits, true);
  assert.equal(formatGiB(b.spareBytes), '51.35 GiB');
});

test('the OOM line is the reported total minus the CUDA context, not the size on the box', () => {
  assert.equal(CUDA_CONTEXT_GIB, 0.5);
  const t4 = gpuFor('t4-16gb');
  assert.equal(t4.gb, 16);
  assert.equal(t4.reportedGiB, 14.56); // less than even 16e9 / 2^30 = 14.90 GiB
  assert.equal(t4.usableGiB, 14.06);
  assert.equal(gpuFor('a100-80gb').usableGiB, 78.75);
  assert.equal(gpuFor('h100-80gb').usableGiB, 78.61);
  for (const gpu of Object.values(GPUS)) {
    assert.ok(gpu.usableGiB < gpu.reportedGiB, gpu.label);
    assert.ok(Math.abs(gpu.reportedGiB - gpu.usableGiB - CUDA_CONTEXT_GIB) < 1e-9, gpu.label);
  }
  const b = budget({ ...lesson7, gpu: 't4-16gb' });
  assert.equal(b.capacityBytes, 14.06 * GIB);
  assert.equal(formatGiB(b.reportedBytes), '14.56 GiB');
  assert.equal(formatGiB(b.contextBytes), '0.50 GiB');
  // A billion parameters with FP32 Adam: the floor alone (14.90 GiB) is over a T4's usable memory.
  assert.ok(b.floorBytes > b.capacityBytes);
});

test('lesson 8: bf16-mixed keeps the 16-byte floor, halves activations, adds 16-bit copies', () => {
  const b = budget({ ...lesson7, precision: 'bf16-mixed' });
  const byKey = Object.fromEntries(b.terms.map((t) => [t.key, t]));
  assert.equal(formatGiB(b.floorBytes), '14.90 GiB');
  assert.equal(formatGiB(byKey.copies.bytes), '1.86 GiB');
  assert.equal(formatGiB(byKey.activations.bytes), '6.25 GiB');
  assert.equal(formatGiB(b.totalBytes), '23.01 GiB');
  // the ticket classifier's shape: half the FP32 activations
  const ticket = budget({ ...lesson7, ...ticketShape, precision: 'bf16-mixed' });
  assert.equal(formatGiB(ticket.terms.find((t) => t.key === 'activations').bytes), '1.41 GiB');
  const pure = budget({ ...lesson7, precision: 'bf16' });
  assert.equal(pure.floorPerParam, 8);
  assert.equal(formatGiB(pure.floorBytes), '7.45 GiB');
});

test('switching the optimizer to SGD removes the optimizer term only', () => {
  const adam = budget(lesson7);
  const sgd = budget({ ...lesson7, optimizer: 'sgd' });
  const get = (b, key) => b.terms.find((t) => t.key === key).bytes;
  assert.equal(get(sgd, 'optimizer'), 0);
  assert.equal(get(sgd, 'weights'), get(adam, 'weights'));
  assert.equal(get(sgd, 'activations'), get(adam, 'activations'));
  assert.equal(formatGiB(sgd.floorBytes), '7.45 GiB');
});

test('a big enough batch crosses the OOM line', () => {
  const b = budget({ ...lesson7, batch: 1024 });
  assert.equal(b.fits, false);
  assert.ok(b.spareBytes < 0);
  assert.equal(budget({ ...lesson7, gpu: 't4-16gb' }).fits, false); // 27.40 GiB > 14.06 GiB usable
  // the old mistake: a 14.45 GiB floor is under a "16 GiB" line but over a T4's 14.06 GiB usable
  assert.equal(budget({ ...lesson7, params: 0.97e9, batch: 1, seq: 1, layers: 1, gpu: 't4-16gb' }).fits, false);
});

test('unknown GPU ids take their size from the name, converted from GB to GiB, less the context', () => {
  assert.equal(gpuFor('a100-80gb').gb, 80);
  const l40s = gpuFor('l40s-48gb');
  assert.equal(l40s.gb, 48);
  assert.equal(l40s.reportedGiB, 44.7); // 48e9 / 2^30 = 44.70
  assert.equal(l40s.usableGiB, 44.2);
  assert.equal(describeCount(1e9), '1.00 billion');
  assert.equal(describeCount(125e6), '125.00 million');
});

test('the scale has round marks', () => {
  assert.deepEqual(scaleTicks(84), [0, 25, 50, 75]);
  assert.deepEqual(scaleTicks(16.8), [0, 5, 10, 15]);
  assert.deepEqual(scaleTicks(100), [0, 25, 50, 75, 100]);
});
