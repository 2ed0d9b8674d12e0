// Unit tests for reshaping experiment results into chart series and headline numbers
// (web/static/js/logic/panel-series.js): transfer series, matmul GFLOP/s and crossover,
// timeline extent, the training run's logging cost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  transferSeries, bestTransfer, gflops, matmulSeries, crossoverSize, timelineEnd, hiddenWork,
  loggingCost, CHANCE_LOSS,
} from '../../web/static/js/logic/panel-series.js';

const s = (median) => ({ median, min: median * 0.9, max: median * 1.1, samples: 7 });

test('transfer points become one aligned series per direction and memory kind', () => {
  const points = [
    { direction: 'h2d', memory: 'pinned', bytes: 4096, gbps: s(2) },
    { direction: 'h2d', memory: 'pinned', bytes: 1024, gbps: s(1) },
    { direction: 'd2h', memory: 'pageable', bytes: 1024, gbps: s(0.5) },
    { direction: 'h2d', memory: 'pageable', bytes: 4096, gbps: s(1.5) },
  ];
  const { sizes, series } = transferSeries(points);
  assert.deepEqual(sizes, [1024, 4096]);
  assert.deepEqual(series.map((x) => x.key), ['h2d-pinned', 'h2d-pageable', 'd2h-pageable']);
  assert.deepEqual(series[0].median, [1, 2]);
  assert.deepEqual(series[1].median, [null, 1.5]);
  assert.equal(series[2].dash, true);
  assert.deepEqual(bestTransfer({ sizes, series }), { gbps: 2, bytes: 4096, label: 'Host → device, pinned' });
  assert.equal(bestTransfer(transferSeries([])), null);
});

test('the CPU backend sweep is one host memcpy series', () => {
  const { series } = transferSeries([{ direction: 'h2h', memory: 'pageable', bytes: 1024, gbps: s(30) }]);
  assert.equal(series.length, 1);
  assert.match(series[0].label, /CPU backend/);
});

test('GFLOP/s from FLOP and milliseconds', () => {
  assert.equal(gflops(2e9, 1000), 2);
  assert.equal(gflops(2 * 512 ** 3, 0), null);
  const { sizes, series } = matmulSeries([
    { size: 16, flop: 8192, cpu_ms: s(0.001), gpu_ms: null, gpu_with_copy_ms: null },
    { size: 32, flop: 65536, cpu_ms: s(0.004), gpu_ms: null, gpu_with_copy_ms: null },
  ]);
  assert.deepEqual(sizes, [16, 32]);
  assert.equal(series.length, 1, 'no GPU series on the CPU backend');
  assert.ok(Math.abs(series[0].gflops[1] - 16.384) < 1e-9);
});

test('the crossover is where the GPU keeps winning (as the server computes it)', () => {
  const row = (size, cpu, gpu) => ({ size, cpu_ms: s(cpu), gpu_ms: gpu === null ? null : s(gpu) });
  const rows = [row(16, 0.01, 0.02), row(32, 0.05, 0.03), row(64, 0.1, 0.2), row(128, 1, 0.3), row(256, 8, 0.5)];
  assert.equal(crossoverSize(rows, 'gpu_ms'), 128);
  assert.equal(crossoverSize(rows, 'gpu_with_copy_ms'), null);
  assert.equal(crossoverSize([row(16, 1, 2)], 'gpu_ms'), null);
  assert.equal(crossoverSize([row(16, 2, 1), { size: 32, cpu_ms: null, gpu_ms: s(1) }], 'gpu_ms'), 16);
});

test('timeline extent and the work the first timer missed', () => {
  const result = {
    cpu_lane: [{ start_ms: 0.1, end_ms: 0.2 }, { start_ms: 0.2, end_ms: 0.3 }],
    device_lane: [{ start_ms: 0.3, end_ms: 5 }, { start_ms: 5, end_ms: 10 }],
  };
  assert.equal(timelineEnd(result), 10);
  assert.equal(timelineEnd({ cpu_lane: [], device_lane: [] }), 1);
  assert.deepEqual(hiddenWork(result), { cpuEnd: 0.3, deviceEnd: 10, afterMs: 9.7 });
});

test('logging cost compares reading the loss every step with every N', () => {
  const cost = loggingCost({ read_every_step_ms: 0.6, read_every_n_ms: 0.4 });
  assert.ok(Math.abs(cost.extraMs - 0.2) < 1e-12);
  assert.ok(Math.abs(cost.ratio - 1.5) < 1e-12);
  assert.equal(loggingCost({}), null);
  assert.ok(Math.abs(CHANCE_LOSS - 1.0986) < 1e-4);
});
