// Unit tests for the Amdahl calculator (web/static/js/logic/amdahl.js). The expected
// values are the lesson's (p = 0.95: 15.4× at 64 cores, 18.6× at 256, a 20× ceiling;
// p = 0.99: 100×) and the server's fallback table (fallbacks.rs formats "{:.2}×").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  speedup,
  ceiling,
  formatSpeedup,
  formatCeiling,
  table,
  workedSteps,
  shareOfCeiling,
  sliderToCores,
  coresToSlider,
  SLIDER_CORE_COUNTS,
  curve,
  niceTop,
  clampNumber,
  TABLE_CORE_COUNTS,
} from '../../web/static/js/logic/amdahl.js';

test('S = 1 / ((1 - p) + p / N) at the lesson values', () => {
  assert.equal(formatSpeedup(speedup(0.95, 64)), '15.42×');
  assert.equal(formatSpeedup(speedup(0.95, 256)), '18.62×');
  assert.equal(formatSpeedup(speedup(0.95, 6912)), '19.95×');
  assert.equal(formatSpeedup(speedup(0.95, 10000)), '19.96×');
  assert.equal(speedup(0.95, 1), 1);
  assert.equal(speedup(0.5, 2), 4 / 3);
  assert.equal(speedup(1, 512), 512);
  assert.equal(speedup(0, 512), 1);
});

test('the table matches the server fallback at p = 0.95', () => {
  assert.deepEqual(TABLE_CORE_COUNTS, [1, 2, 8, 64, 1024, 10000]);
  assert.deepEqual(
    table(0.95).map((row) => formatSpeedup(row.s)),
    ['1.00×', '1.90×', '5.93×', '15.42×', '19.64×', '19.96×'],
  );
  assert.deepEqual(
    table(0.9).map((row) => formatSpeedup(row.s)),
    ['1.00×', '1.82×', '4.71×', '8.77×', '9.91×', '9.99×'],
  );
});

test('the ceiling is 1 / (1 - p) and is never reached', () => {
  assert.equal(formatCeiling(0.95), '20.0×');
  assert.equal(formatCeiling(0.99), '100.0×');
  assert.equal(formatCeiling(0.5), '2.0×');
  assert.equal(formatCeiling(1), 'no ceiling');
  assert.equal(ceiling(1), Infinity);
  for (const n of [1e3, 1e5, 1e6]) assert.ok(speedup(0.95, n) < 20);
  assert.ok(Math.abs(shareOfCeiling(0.95, 64) - 0.771) < 0.001);
});

test('worked steps substitute p and N and end at the printed speedup', () => {
  assert.deepEqual(workedSteps(0.95, 64), [
    'S = 1 / ((1 − 0.95) + 0.95 / 64)',
    '  ≈ 1 / (0.05 + 0.01484)',
    '  ≈ 1 / 0.06484',
    '  ≈ 15.42×',
  ]);
  assert.deepEqual(workedSteps(0.5, 2), [
    'S = 1 / ((1 − 0.5) + 0.5 / 2)',
    '  = 1 / (0.5 + 0.25)',
    '  = 1 / 0.75',
    '  ≈ 1.33×',
  ]);
  assert.equal(workedSteps(0.95, 10000)[0], 'S = 1 / ((1 − 0.95) + 0.95 / 10,000)');
  assert.equal(workedSteps(0.95, 10000).at(-1), '  ≈ 19.96×');
});

test('the slider steps land on exact core counts, including the lesson ones', () => {
  for (const n of [24, 64, 256, 6912, 10000]) {
    assert.equal(sliderToCores(coresToSlider(n)), n, `slider reaches ${n}`);
  }
  assert.equal(sliderToCores(0), 1);
  assert.equal(sliderToCores(SLIDER_CORE_COUNTS.length - 1), 100000);
  assert.equal(sliderToCores(99), 100000, 'positions past the end clamp');
  assert.equal(sliderToCores(coresToSlider(100)), 128, 'a typed 100 sits at the nearest stop');
  assert.equal(sliderToCores(coresToSlider(1000000)), 100000);
});

test('the curve rises towards the ceiling on a log axis', () => {
  const points = curve(0.95, 100000, 100);
  assert.equal(points.length, 101);
  assert.equal(points[0].x, 0);
  assert.equal(points[0].s, 1);
  assert.equal(points[100].x, 5);
  assert.ok(Math.abs(points[100].s - speedup(0.95, 1e5)) < 1e-9);
  for (let i = 1; i < points.length; i += 1) assert.ok(points[i].s > points[i - 1].s);
});

test('niceTop rounds an axis maximum up to a round number', () => {
  assert.equal(niceTop(20), 20);
  assert.equal(niceTop(19.96), 20);
  assert.equal(niceTop(22), 25);
  assert.equal(niceTop(110), 150);
  assert.equal(niceTop(2.2), 2.5);
  assert.equal(niceTop(1100), 1500);
  assert.equal(niceTop(7), 8);
  assert.equal(niceTop(0.7), 0.8);
  assert.equal(niceTop(0), 1);
});

test('clampNumber keeps p in [0, 1]', () => {
  assert.equal(clampNumber('1.5', 0, 1, 0.95), 1);
  assert.equal(clampNumber('-2', 0, 1, 0.95), 0);
  assert.equal(clampNumber('', 0, 1, 0.95), 0.95);
  assert.equal(clampNumber('0.99', 0, 1, 0.95), 0.99);
});

test('a speedup just under the ceiling never prints as the ceiling', () => {
  assert.equal(formatSpeedup(speedup(0.95, 100000), 20), '19.996×');
  assert.equal(formatSpeedup(speedup(0.95, 1000000), 20), '19.9996×');
  assert.equal(formatSpeedup(speedup(0.95, 10000), 20), '19.96×', 'the fallback rows are unchanged');
  assert.equal(formatSpeedup(speedup(0.95, 100000)), '20.00×', 'without the ceiling: plain two decimals');
  assert.equal(formatSpeedup(speedup(1, 64), Infinity), '64.00×');
  assert.equal(workedSteps(0.95, 100000).at(-1), '  ≈ 19.996×');
});
