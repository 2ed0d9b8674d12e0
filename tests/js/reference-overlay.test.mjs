// The reference overlay keeps every figure's label and source, picks only what names
// the experiment, shows recorded runs with their provenance, and says so when there is
// nothing to show rather than making a number up.

import test from 'node:test';
import assert from 'node:assert/strict';

import { readFileSync } from 'node:fs';

import { referenceOverlay, isoDate, recordedMeasurements, headlineNumbers, ownRunFiles } from '../../web/static/js/logic/reference-overlay.js';

// A run made on the CPU by tests/gpu/gpu-run.sh --cpu and imported with --fixture.
const fixture = JSON.parse(readFileSync(new URL('../fixtures/reference-runs/cpu-chain-fixture.json', import.meta.url)));

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
  assert.equal(o.recorded[0].label, 'What Test GPU measured (recorded run, 2025-11-23)');
  assert.equal(o.recorded[0].provenance, 'driver 999.1, 2025-11-23, GPU Lab 0.1.0');
  assert.equal(o.recorded[0].fixture, false);
  assert.deepEqual(o.recorded[0].numbers, ['crossover size: 256']);
});

test('nothing to show says so, with no number', () => {
  const o = referenceOverlay([published, recorded], 'timing');
  assert.deepEqual([o.published, o.recorded], [[], []]);
  assert.match(o.empty, /nothing honest to show/);
  assert.doesNotMatch(o.empty, /\d/);
  assert.equal(isoDate(undefined), 'unknown date');
});

test('a fixture from the CPU chain says it is not a GPU, in the aside and under the reveal', () => {
  assert.equal(fixture.recorded.fixture, true);
  const o = referenceOverlay([published, fixture], 'transfer');
  assert.equal(o.recorded.length, 1);
  assert.match(o.recorded[0].label, /^Test fixture from GPU Lab's CPU chain on .+: not a GPU$/);
  assert.equal(o.recorded[0].fixture, true);
  const measured = fixture.recorded.experiments.find((e) => e.name === 'transfer').result.measured;
  assert.match(o.recorded[0].numbers[0], new RegExp(`^${measured.quantity}: `));
  const under = recordedMeasurements([published, fixture], 'transfer', measured.quantity);
  assert.equal(under.length, 1);
  assert.deepEqual([under[0].value, under[0].unit, under[0].sameQuestion, under[0].fixture], [measured.value, measured.unit, true, true]);
  assert.equal(recordedMeasurements([fixture], 'transfer', 'another.key')[0].sameQuestion, false);
  assert.deepEqual(recordedMeasurements([fixture], 'timing', 'x'), []);
});

test('a recorded GPU run is labelled with its device and date, and CUDA joins its provenance', () => {
  const run = structuredClone(recorded);
  run.recorded.cuda_version = '13.0';
  run.recorded.experiments[0].result.measured = { quantity: 'matmul.crossover', value: 256, unit: 'n' };
  const o = referenceOverlay([run], 'matmul');
  assert.equal(o.recorded[0].label, 'What Test GPU measured (recorded run, 2025-11-23)');
  assert.equal(o.recorded[0].provenance, 'driver 999.1, CUDA 13.0, 2025-11-23, GPU Lab 0.1.0');
  assert.equal(o.recorded[0].numbers[0], 'matmul.crossover: 256 n');
  const [m] = recordedMeasurements([run], 'matmul', 'matmul.crossover');
  assert.equal(m.label, 'What Test GPU measured (recorded run, 2025-11-23)');
  assert.equal(m.sameQuestion, true);
});

test('headline figures keep their spread', () => {
  assert.deepEqual(headlineNumbers({ step_ms: { median: 2, min: 1.5, max: 3.25, samples: 9 }, crossover_size: 64, rows: [] }),
    ['step ms: 2 (1.5–3.25)', 'crossover size: 64']);
});

test("a learner's own GPU run is labelled as theirs, beside the course's, in the aside and under the reveal", () => {
  const uploaded = [{ id: 7, imported_at: '2026-11-29T10:00:00.000Z', file: {
    kind: 'recorded', title: 'Your run on Tesla T4', note: 'not this server', figures: [],
    recorded: { device: 'Tesla T4', driver_version: '550.54.15', recorded_at_unix: 1795900000, gpulab_version: '0.1.0', experiments: [{ name: 'matmul', result: { crossover_size: 512, measured: { quantity: 'matmul.crossover_size', value: 512, unit: 'n' } } }] },
  } }, { id: 8, file: { kind: 'published' } }];
  const own = ownRunFiles(uploaded);
  assert.equal(own.length, 1, 'only recorded runs are taken');
  assert.equal(uploaded[0].file.recorded.own, undefined, 'the response is not changed');
  const o = referenceOverlay([recorded, ...own], 'matmul');
  assert.deepEqual(o.recorded.map((r) => r.label), [
    'What Test GPU measured (recorded run, 2025-11-23)',
    'What your Tesla T4 measured, 2026-11-28',
  ]);
  assert.deepEqual(o.recorded.map((r) => r.own), [false, true]);
  const under = recordedMeasurements(own, 'matmul', 'matmul.crossover_size');
  assert.equal(under[0].label, 'What your Tesla T4 measured, 2026-11-28');
  assert.equal(under[0].value, 512);
  assert.equal(under[0].own, true);
});
