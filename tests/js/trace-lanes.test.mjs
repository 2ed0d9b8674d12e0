// Unit tests for reading an experiment's Chrome trace into timeline lanes
// (web/static/js/logic/trace-lanes.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { traceLanes, traceEnd, spanCount, traceFileName } from '../../web/static/js/logic/trace-lanes.js';

const trace = {
  traceEvents: [
    { name: 'process_name', ph: 'M', pid: 1, tid: 0, ts: 0, args: { name: 'GPU Lab: launch overhead' } },
    { name: 'thread_name', ph: 'M', pid: 1, tid: 1, ts: 0, args: { name: 'CPU: launch calls and waits' } },
    { name: 'thread_name', ph: 'M', pid: 1, tid: 2, ts: 0, args: { name: 'GPU stream' } },
    { name: 'kernel 1', cat: 'kernel', ph: 'X', pid: 1, tid: 2, ts: 40, dur: 10, args: {} },
    { name: 'kernel 0', cat: 'kernel', ph: 'X', pid: 1, tid: 2, ts: 20, dur: 10, args: {} },
    { name: 'launch 0', cat: 'launch', ph: 'X', pid: 1, tid: 1, ts: 0, dur: 5, args: {} },
    { name: 'kernel 2 … kernel 9 (8 spans)', cat: 'kernel', ph: 'X', pid: 1, tid: 2, ts: 60, dur: 1940, args: { count: 8, busy_us: 80 } },
  ],
  displayTimeUnit: 'ms',
  otherData: { aggregated: '' },
};

test('tracks become lanes named by their thread_name events, spans in ms and in time order', () => {
  const lanes = traceLanes(trace);
  assert.deepEqual(lanes.map((l) => l.name), ['CPU: launch calls and waits', 'GPU stream']);
  assert.deepEqual(lanes[1].spans.map((s) => s.name.split(' (')[0]), ['kernel 0', 'kernel 1', 'kernel 2 … kernel 9']);
  assert.equal(lanes[1].spans[0].startMs, 0.02);
  assert.equal(lanes[1].spans[0].durMs, 0.01);
  assert.equal(traceEnd(lanes), 2);
  assert.equal(spanCount(lanes), 1 + 2 + 8, 'an aggregated event counts every span it merges');
});

test('a span on an unnamed track still gets a lane, and bad input gives none', () => {
  const lanes = traceLanes({ traceEvents: [{ name: 'x', ph: 'X', tid: 7, ts: 0, dur: 1 }] });
  assert.deepEqual(lanes.map((l) => l.name), ['track 7']);
  assert.deepEqual(traceLanes(null), []);
  assert.deepEqual(traceLanes({}), []);
  assert.equal(traceEnd([]), 0);
});

test('the file name is safe whatever the experiment is called', () => {
  assert.equal(traceFileName('launch'), 'gpulab-launch-trace.json');
  assert.equal(traceFileName('../Timing Trap!'), 'gpulab-timing-trap-trace.json');
  assert.equal(traceFileName(''), 'gpulab-run-trace.json');
});
