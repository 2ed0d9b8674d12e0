// The "read the loss every step" verdicts follow the measured numbers on their backend:
// a gap inside the runs' spread is "no measurable difference" (never "1×" or a ratio
// presented as the lesson's effect), a CPU gap is never blamed on the reads, and a GPU
// gap beyond the noise is reported with its size and the sync explanation.

import test from 'node:test';
import assert from 'node:assert/strict';

import {
  spreadOf, compareWithNoise, breakItLoggingVerdict, trainingLoggingVerdict, timingTrapVerdict,
} from '../../web/static/js/logic/measured-verdicts.js';

const s = (median, min, max, extra = {}) => ({ median, min, max, samples: 20, ...extra });
const breakIt = (backend, every, sparse) => ({
  case: 'log-every-step',
  runs: [{ log_every: 1, step_ms: every, samples_per_sec: 1, loss_reads: 60 }, { log_every: 50, step_ms: sparse, samples_per_sec: 1, loss_reads: 2 }],
  provenance: { backend },
});

test('spread is the IQR when quartiles are sent, else max − min', () => {
  assert.equal(spreadOf(s(2, 1, 9)), 8);
  assert.equal(spreadOf(s(2, 1, 9, { q1: 1.5, q3: 2.5 })), 1);
  assert.equal(spreadOf(null), 0);
});

test('a gap inside the noise is not measurable; one beyond it is', () => {
  assert.equal(compareWithNoise(1.02, 1.0, 0).measurable, false, 'below 5% is never measurable');
  assert.equal(compareWithNoise(1.5, 1.0, 0.8).measurable, false);
  const big = compareWithNoise(3, 1, 0.2);
  assert.equal(big.measurable, true);
  assert.equal(big.ratio, 3);
  assert.equal(compareWithNoise(0, 1, 0), null);
});

test('CPU break-it with equal runs says "no measurable difference" and why, never a ratio', () => {
  const v = breakItLoggingVerdict(breakIt('cpu', s(1.01, 0.9, 1.3), s(1.0, 0.9, 1.2)));
  assert.equal(v.headline, 'no measurable difference');
  assert.match(v.text, /No measurable difference/);
  assert.match(v.text, /waits for nothing/);
  assert.match(v.text, /On a GPU.*sync point/);
  assert.doesNotMatch(v.text, /\d×/);
});

test('CPU break-it with a real gap reports it but does not blame the reads', () => {
  const v = breakItLoggingVerdict(breakIt('cpu', s(3.0, 2.9, 3.1), s(1.0, 0.95, 1.05)));
  assert.equal(v.measurable, true);
  assert.match(v.headline, /3× slower \(not from the reads\)/);
  assert.match(v.text, /not the cost of the reads/);
  assert.equal(v.tone, 'warn');
});

test('GPU break-it: slower beyond the noise is the lesson; faster is called out as noise', () => {
  const slow = breakItLoggingVerdict(breakIt('cuda', s(2.0, 1.9, 2.2), s(0.5, 0.45, 0.6)));
  assert.equal(slow.headline, '4× slower');
  assert.match(slow.text, /made each step 4× slower/);
  const fast = breakItLoggingVerdict(breakIt('cuda', s(0.5, 0.45, 0.6), s(2.0, 1.9, 2.2)));
  assert.match(fast.text, /which a sync cannot cause/);
  const same = breakItLoggingVerdict(breakIt('cuda', s(1.0, 0.5, 2.0), s(1.2, 0.6, 2.5)));
  assert.equal(same.headline, 'no measurable difference');
});

test('the BF16 training probe on the CPU: 9.8× inside a wide step spread is no difference', () => {
  const result = { read_every_step_ms: 9.8, read_every_n_ms: 1.0, step_ms: s(1.1, 0.9, 14), params: { log_every: 10 }, provenance: { backend: 'cpu' } };
  const v = trainingLoggingVerdict(result);
  assert.equal(v.measurable, false);
  assert.doesNotMatch(v.text, /9\.8×/);
  assert.match(v.text, /No measurable difference/);
  // The same gap with a tight step spread is measurable, and still not blamed on reads.
  const tight = trainingLoggingVerdict({ ...result, step_ms: s(1.0, 0.98, 1.05) });
  assert.equal(tight.measurable, true);
  assert.match(tight.text, /not the cost of the reads/);
});

test('the training probe on a GPU reports a real sync cost', () => {
  const v = trainingLoggingVerdict({ read_every_step_ms: 0.9, read_every_n_ms: 0.3, step_ms: s(0.3, 0.28, 0.35), params: { log_every: 10 }, provenance: { backend: 'cuda' } });
  assert.equal(v.headline, '3× slower');
  assert.match(v.text, /sync point/);
  assert.equal(trainingLoggingVerdict({}), null);
});

test('the timing trap is claimed only when the unsynchronised timer read measurably less', () => {
  const trap = timingTrapVerdict({ host_no_sync_ms: 0.5, host_sync_ms: 5 }, 4.4, 'GPU');
  assert.equal(trap.headline, '10×');
  assert.match(trap.text, /10× less than the 5 ms/);
  const none = timingTrapVerdict({ host_no_sync_ms: 5, host_sync_ms: 5.1 }, 0, 'stream thread');
  assert.equal(none.headline, 'no measurable difference');
  assert.doesNotMatch(none.text, /less than/);
});
