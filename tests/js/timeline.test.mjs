// Unit tests of the timeline logic (lesson 5): the lesson's 3 ms CPU / 10 ms GPU steps
// give 10 ms per step without sync and 13 ms with a sync on every step, and a host timer
// that never synchronises sees only the CPU's launches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axisTicks, formatMs, markerSchedule, simulate, steadyStateMs, worstCaseMs } from '../../web/static/js/logic/timeline.js';

const base = { steps: 8, cpuMs: 3, gpuMs: 10 };

test('without a sync point the CPU races ahead and the timer misses the GPU work', () => {
  const r = simulate({ ...base, syncAfter: markerSchedule(0, false) });
  assert.equal(r.hostNoSyncMs, 24); // 8 launches × 3 ms
  assert.equal(r.hostSyncMs, 83); // first launch 3 ms, then 8 × 10 ms of kernels
  assert.equal(r.missedMs, 59);
  assert.equal(r.gpuIdleMs, 0);
  assert.equal(r.cpuWaitMs, 0);
  assert.equal(formatMs(r.perStepMs), '10.38 ms');
  assert.deepEqual(r.gpu.map((s) => s.start), [3, 13, 23, 33, 43, 53, 63, 73]);
});

test('a sync on every step makes the lanes take turns: 13 ms per step', () => {
  const r = simulate({ ...base, syncAfter: markerSchedule(0, true) });
  assert.equal(r.hostSyncMs, 104);
  assert.equal(r.hostNoSyncMs, 104); // the CPU already waited for the last step
  assert.equal(r.missedMs, 0);
  assert.equal(formatMs(r.perStepMs), '13 ms');
  assert.equal(r.gpuIdleMs, 7 * 3);
  assert.equal(r.syncSteps.length, 8);
  assert.equal(steadyStateMs(3, 10, true), 13);
  assert.equal(steadyStateMs(3, 10, false), 10);
  assert.equal((13 - 10) / 10, 0.3); // the lesson's "30% slower"
});

test('one sync point after step 4 opens one 3 ms gap in the GPU lane', () => {
  const r = simulate({ ...base, syncAfter: markerSchedule(4, false) });
  const wait = r.cpu.find((s) => s.kind === 'wait');
  assert.deepEqual([wait.start, wait.end], [12, 43]);
  assert.equal(r.gpuIdleMs, 3);
  assert.equal(r.hostSyncMs, 86);
  assert.equal(r.hostNoSyncMs, 55);
});

test('when the CPU is the slower side, the GPU idles even without syncs', () => {
  const r = simulate({ steps: 8, cpuMs: 12, gpuMs: 5, syncAfter: markerSchedule(0, false) });
  assert.equal(r.gpuIdleMs, 7 * 7);
  assert.equal(r.hostNoSyncMs, 96);
  assert.equal(r.hostSyncMs, 101);
});

test('the axis covers the worst case with round ticks', () => {
  assert.equal(worstCaseMs(8, 3, 10), 104);
  assert.deepEqual(axisTicks(104), [0, 50, 100]);
  assert.deepEqual(axisTicks(40), [0, 10, 20, 30, 40]);
  assert.equal(formatMs(24), '24 ms');
});
