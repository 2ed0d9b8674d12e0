// The sweep's spread: the band follows the quartiles (min–max only when there are none),
// and the summary names each point with outliers or that did not settle — and says
// "every point settled" only when none did either.

import test from 'node:test';
import assert from 'node:assert/strict';

import { bandOf, bandColumns, spreadFindings } from '../../web/static/js/logic/sweep-spread.js';

const s = (median, extra = {}) => ({ median, min: median * 0.8, max: median * 1.5, q1: median * 0.95, q3: median * 1.05, samples: 5, outliers: 0, stable: true, ...extra });
const kinds = [{ key: 'cpu_ms', short: 'CPU' }, { key: 'gpu_ms', short: 'GPU' }];
const side = (n) => `${n} × ${n}`;

test('the band is the IQR, else min–max, else nothing', () => {
  assert.deepEqual(bandOf(s(10)), { low: 9.5, high: 10.5, kind: 'IQR' });
  assert.deepEqual(bandOf({ median: 2, min: 1, max: 3 }), { low: 1, high: 3, kind: 'min–max' });
  assert.equal(bandOf(null), null);
  const cols = bandColumns([{ cpu_ms: s(10) }, { cpu_ms: null }], 'cpu_ms');
  assert.deepEqual(cols, { low: [9.5, null], high: [10.5, null] });
});

test('a point with outliers and a point that did not settle are both named', () => {
  const rows = [
    { size: 16, cpu_ms: s(1), gpu_ms: s(2) },
    { size: 32, cpu_ms: s(4, { outliers: 2, samples: 12 }), gpu_ms: s(2) },
    { size: 64, cpu_ms: s(8), gpu_ms: s(2, { stable: false, q1: 1.5, q3: 2.5, samples: 20 }) },
  ];
  const found = spreadFindings(rows, kinds, side);
  assert.equal(found.length, 2);
  assert.match(found[0].text, /^Outliers \(CPU\): at 32 × 32 \(2 of 12 samples\), samples fell outside/);
  assert.deepEqual(found[0].sizes, [32]);
  assert.match(found[1].text, /^Noisy points \(GPU\): 64 × 64 \(middle half spread over 50% of the median after 20 samples\)/);
  assert.ok(found.every((f) => !/Every point settled/.test(f.text)));
});

test('"every point settled" only when no point is flagged', () => {
  const found = spreadFindings([{ size: 16, cpu_ms: s(1) }, { size: 32, cpu_ms: s(3) }], kinds, side);
  assert.equal(found.length, 1);
  assert.match(found[0].text, /Every point settled/);
  assert.deepEqual(spreadFindings([], kinds, side), []);
  const two = spreadFindings([{ size: 16, cpu_ms: s(1, { outliers: 1 }) }, { size: 32, cpu_ms: s(3, { outliers: 1 }) }], kinds, side);
  assert.equal(two.length, 1, 'one sentence per kind, not per point');
  assert.deepEqual(two[0].sizes, [16, 32]);
  assert.match(spreadFindings([{ size: 16, cpu_ms: { median: 1, min: 1, max: 2 } }], kinds, side)[0].text, /no quartiles/);
});
