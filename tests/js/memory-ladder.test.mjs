// Unit tests for the memory ladder's figures and log scale
// (web/static/js/logic/memory-ladder.js): A100-class latencies of ~1, ~5, ~50 and ~500
// cycles, the sizes the lesson and fallback give, and bars that grow with each rung down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  RUNGS,
  AXES,
  logFraction,
  cyclesToNanoseconds,
  formatNanoseconds,
  timesRegisterLatency,
  bytesLabel,
  cyclesLabel,
} from '../../web/static/js/logic/memory-ladder.js';

test('the rungs, fastest first, with the lesson figures', () => {
  assert.deepEqual(RUNGS.map((r) => r.id), ['registers', 'shared', 'l2', 'hbm', 'host']);
  assert.deepEqual(RUNGS.map((r) => r.latencyCycles), [4, 23, 200, 290, 1410]);
  assert.equal(RUNGS[0].sizeBytes, 65536 * 4);
  assert.equal(RUNGS[1].sizeBytes, 192 * 1024);
  assert.equal(RUNGS[2].sizeBytes, 40 * 1024 * 1024);
  assert.equal(RUNGS[3].sizeBytes, 80e9);
  assert.match(RUNGS[1].sizeText, /164 KiB/);
  assert.match(RUNGS[3].sizeText, /2,039 GB\/s/);
});

test('latency grows down the ladder; so does size from L1 on', () => {
  for (let i = 1; i < RUNGS.length; i += 1) {
    assert.ok(RUNGS[i].latencyCycles > RUNGS[i - 1].latencyCycles);
  }
  for (let i = 2; i < RUNGS.length; i += 1) assert.ok(RUNGS[i].sizeBytes > RUNGS[i - 1].sizeBytes);
  // Per SM the register file (256 KiB) really is larger than shared memory / L1 (192 KiB).
  assert.ok(RUNGS[0].sizeBytes > RUNGS[1].sizeBytes);
});

test('HBM is 72.5× a dependent register operation and PCIe about 64× slower than HBM', () => {
  assert.equal(timesRegisterLatency(RUNGS[3]), 72.5);
  assert.equal(timesRegisterLatency(RUNGS[1]), 5.8);
  assert.equal(Math.round(2039 / 32), 64);
  assert.match(RUNGS[4].detail, /64 times slower/);
});

test('cycles to nanoseconds at the A100 boost clock of 1.41 GHz', () => {
  assert.equal(formatNanoseconds(cyclesToNanoseconds(4)), '2.8 ns');
  assert.equal(formatNanoseconds(cyclesToNanoseconds(23)), '16 ns');
  assert.equal(formatNanoseconds(cyclesToNanoseconds(200)), '142 ns');
  assert.equal(formatNanoseconds(cyclesToNanoseconds(290)), '206 ns');
  assert.equal(formatNanoseconds(cyclesToNanoseconds(1410)), '1,000 ns');
});

test('the log scale places decades evenly', () => {
  const { min, max } = AXES.latency;
  assert.equal(logFraction(min, min, max), 0);
  assert.equal(logFraction(max, min, max), 1);
  assert.ok(Math.abs(logFraction(100, 1, 10000) - 0.5) < 1e-12);
  assert.ok(Math.abs(logFraction(1e8, AXES.size.min, AXES.size.max) - 0.5) < 1e-12);
  assert.equal(logFraction(1e20, 1, 10), 1, 'clamped above');
  assert.equal(logFraction(0.01, 1, 10), 0, 'clamped below');
});

test('axis labels', () => {
  assert.deepEqual(AXES.size.ticks.map(bytesLabel), ['10 kB', '1 MB', '100 MB', '10 GB', '1 TB']);
  assert.deepEqual(AXES.latency.ticks.map(cyclesLabel), ['1', '10', '100', '1k', '10k']);
});
