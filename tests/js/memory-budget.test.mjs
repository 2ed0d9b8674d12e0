// Unit tests of the memory budget (lessons 7 and 8): 16 bytes per parameter for FP32
// Adam, 14.90 GiB for a billion parameters, the fallback's bytes per parameter, and the
// activation estimate the calculator adds on top.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  GIB,
  activationBytes,
  budget,
  bytesPerParam,
  configFromParams,
  describeCount,
  formatGiB,
  gpuFor,
  headsFor,
  scaleTicks,
} from '../../web/static/js/logic/memory-budget.js';

const lesson7 = configFromParams({ params: 1e9, precision: 'fp32', optimizer: 'adam', batch: 32, seq: 128, hidden: 768, layers: 12, gpu: 'a100-80gb' });

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

test('lesson 7 defaults fit an A100 80 GB with 62.29 GiB to spare', () => {
  const b = budget(lesson7);
  assert.equal(formatGiB(b.totalBytes), '17.71 GiB');
  assert.equal(b.capacityBytes, 80 * GIB);
  assert.equal(b.fits, true);
  assert.equal(formatGiB(b.spareBytes), '62.29 GiB');
});

test('lesson 8: bf16-mixed keeps the 16-byte floor, halves activations, adds 16-bit copies', () => {
  const b = budget({ ...lesson7, precision: 'bf16-mixed' });
  const byKey = Object.fromEntries(b.terms.map((t) => [t.key, t]));
  assert.equal(formatGiB(b.floorBytes), '14.90 GiB');
  assert.equal(formatGiB(byKey.copies.bytes), '1.86 GiB');
  assert.equal(formatGiB(byKey.activations.bytes), '1.41 GiB');
  assert.equal(formatGiB(b.totalBytes), '18.17 GiB');
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
  assert.equal(budget({ ...lesson7, gpu: 't4-16gb' }).fits, false); // 17.71 GiB > 16 GiB
});

test('unknown GPU ids take their size from the name', () => {
  assert.equal(gpuFor('a100-80gb').gib, 80);
  assert.equal(gpuFor('l40s-48gb').gib, 48);
  assert.equal(describeCount(1e9), '1.00 billion');
  assert.equal(describeCount(125e6), '125.00 million');
});

test('the scale has round marks', () => {
  assert.deepEqual(scaleTicks(84), [0, 25, 50, 75]);
  assert.deepEqual(scaleTicks(16.8), [0, 5, 10, 15]);
  assert.deepEqual(scaleTicks(100), [0, 25, 50, 75, 100]);
});
