// The reference overlay keeps every figure's label and source, picks only what names
// the experiment, shows recorded runs with their provenance, and says so when there is
// nothing to show rather than making a number up.

import test from 'node:test';
import assert from 'node:assert/strict';

import { referenceOverlay, isoDate } from '../../web/static/js/logic/reference-overlay.js';

const published = {
  kind: 'published',
  title: 'Published peaks',
  note: 'not measured',
  figures: [
    { device: 'A100 80GB PCIe', metric: 'pcie_gbps', value: 64, unit: 'GB/s', detail: 'Both directions.', experiments: ['transfer'], source: { title: 'NVIDIA A100 datasheet', url: 'https://example.com/a100' } },
    { device: 'H100 SXM', metric: 'fp32_tflops', value: 67, unit: 'TFLOP/s', detail: '', experiments: ['matmul'], source: { title: 'NVIDIA H100 datasheet', url: 'https://example.com/h100' } },
  ],
};
const recorded = {
  kind: 'recorded',
  title: 'run',
  note: 'measured',
  figures: [],
  recorded: { device: 'Test GPU', driver_version: '999.1', recorded_at_unix: 1763856000, gpulab_version: '0.1.0', experiments: [{ name: 'matmul', result: { crossover_size: 256, rows: [] } }] },
};

test('a published figure is labelled as a peak with its source', () => {
  const o = referenceOverlay([published], 'transfer');
  assert.equal(o.published.length, 1);
  assert.equal(o.published[0].label, 'A100 80GB PCIe: host↔GPU link (PCIe)');
  assert.equal(o.published[0].value, '64 GB/s');
  assert.match(o.published[0].detail, /^Published peak, not measured\. Both directions\./);
  assert.equal(o.published[0].source.url, 'https://example.com/a100');
  assert.equal(o.empty, null);
  assert.match(o.heading, /not this server/);
});

test('a recorded run appears with its device, driver, date and version', () => {
  const o = referenceOverlay([published, recorded], 'matmul');
  assert.equal(o.published.length, 1);
  assert.equal(o.recorded.length, 1);
  assert.equal(o.recorded[0].label, 'Measured by GPU Lab on Test GPU');
  assert.equal(o.recorded[0].provenance, 'driver 999.1, 2025-11-23, GPU Lab 0.1.0');
  assert.deepEqual(o.recorded[0].numbers, ['crossover size: 256']);
});

test('nothing to show says so, with no number', () => {
  const o = referenceOverlay([published, recorded], 'timing');
  assert.deepEqual([o.published, o.recorded], [[], []]);
  assert.match(o.empty, /nothing honest to show/);
  assert.doesNotMatch(o.empty, /\d/);
  assert.equal(isoDate(undefined), 'unknown date');
});
