// The matmul panel's sentence on its CPU line against OpenBLAS recorded on this machine:
// each percentage is the record's numpy ms ÷ this run's median ms at that size, the
// sizes are named, small sizes and sizes only one side has are left out, the sentence
// says the record is from another time, and with no record it says how to make one.

import test from 'node:test';
import assert from 'node:assert/strict';

import { blasComparison, comparedSizes, MIN_COMPARED, WELL_BELOW } from '../../web/static/js/logic/blas-reference.js';

/** A record as GET /api/device serves it, with numpy's median ms per size. */
function reference(numpyMs) {
  return {
    format: 1,
    cpu: { model: 'Test CPU', logical_cores: 2 },
    blas: 'OpenBLAS 0.3.31',
    library: 'numpy 2.4.6 with OpenBLAS 0.3.31 (SkylakeX kernel, 2 threads)',
    recorded_at: '2026-11-27T09:14:03Z',
    load_average: { before: [1.35, 1.38, 1.65], after: [1.4, 1.39, 1.65] },
    rounds: 5,
    rows: Object.entries(numpyMs).map(([size, ms]) => ({ size: Number(size), numpy_ms: ms, gpulab_ms: ms, ratio: 1 })),
  };
}

/** A matmul result's rows with this run's CPU medians (null: skipped as too slow). */
const rows = (cpuMs) => Object.entries(cpuMs).map(([size, median]) => ({
  size: Number(size),
  cpu_ms: median === null ? null : { median, q1: median, q3: median, samples: 5 },
}));

test('each shared size from 256 up is compared as OpenBLAS ms ÷ this run\'s ms, and named', () => {
  const ref = reference({ 128: 0.04, 256: 0.15, 512: 0.96, 1024: 6.8 });
  const live = rows({ 16: 0.001, 128: 0.02, 256: 0.2, 512: 0.96, 1024: 8 });
  const got = blasComparison(live, ref);
  assert.deepEqual(got.shares.map((s) => Number(s.toFixed(4))), [0.75, 1, 0.85]);
  assert.match(got.text, /ran at 75–100% of OpenBLAS 0\.3\.31's speed on this machine \(75% at n = 256, 100% at 512 and 85% at 1024\)/);
  // 128 is in both, but below MIN_COMPARED: no percentage for it.
  assert.equal(MIN_COMPARED, 256);
  assert.doesNotMatch(got.text, /\b128\b/);
  assert.equal(got.tone, 'warn', `the lowest, 75%, is below ${WELL_BELOW * 100}%`);
  assert.match(got.text, /the GPU's lead over this CPU line is larger than its lead over OpenBLAS 0\.3\.31 would be/);
});

test('the sentence says where the reference comes from and that it is from another time', () => {
  const got = blasComparison(rows({ 1024: 6.4 }), reference({ 1024: 6.0 }));
  assert.match(got.text, /ran at 94% of OpenBLAS 0\.3\.31's speed on this machine at n = 1024\./);
  assert.match(got.text, /numpy 2\.4\.6 with OpenBLAS 0\.3\.31 \(SkylakeX kernel, 2 threads\)/);
  assert.match(got.text, /recorded by `tests\/bench\/sgemm\.sh` on 2026-11-27 at a load average of 1\.35, not during this run/);
  assert.match(got.text, /moves with how busy the machine was then and now/);
  assert.equal(got.tone, 'plain');
});

test('a CPU line at least as fast as the library says the GPU is not flattered', () => {
  const got = blasComparison(rows({ 256: 0.1, 512: 0.5 }), reference({ 256: 0.1, 512: 0.6 }));
  assert.match(got.text, /ran at 100–120% of OpenBLAS/);
  assert.match(got.text, /at least as fast as OpenBLAS 0\.3\.31/);
  assert.equal(got.tone, 'good');
});

test('sizes only one side timed are left out, and with none shared nothing is claimed', () => {
  const ref = reference({ 256: 0.15, 512: 1, 2048: 60 });
  // 512 skipped as too slow in this run; 2048 not reached.
  assert.deepEqual(comparedSizes(rows({ 256: 0.3, 512: null }), ref).map((p) => p.size), [256]);
  const none = blasComparison(rows({ 64: 0.01, 128: 0.03 }), ref);
  assert.deepEqual(none.shares, []);
  assert.doesNotMatch(none.text, /\d+%/);
  assert.match(none.text, /Nothing to compare with OpenBLAS 0\.3\.31 yet: this run's CPU line has none of the reference's sizes \(n = 256, 512, 2048\); choose a largest matrix side of at least 256/);
  const smallOnly = blasComparison(rows({ 128: 0.03 }), reference({ 128: 0.04 }));
  assert.match(smallOnly.text, /reference has no size from n = 256 up; run `bash tests\/bench\/sgemm\.sh` again/);
});

test('with no reference the panel says how to record one', () => {
  for (const missing of [null, undefined]) {
    const got = blasComparison(rows({ 256: 0.2 }), missing);
    assert.deepEqual(got.shares, []);
    assert.match(got.text, /no OpenBLAS reference has been recorded on this machine/);
    assert.match(got.text, /run `bash tests\/bench\/sgemm\.sh` on the server and restart it/);
    assert.doesNotMatch(got.text, /\d+%/);
  }
});
