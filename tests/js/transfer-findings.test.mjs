// The transfer benchmark's captions say what the measured curve shows, on its backend:
// the CPU's memcpy curve that peaks at small sizes is described as such (never as
// "small copies are dominated by fixed overhead"), and a GPU's small-copy penalty is
// claimed only when the smallest size really measured clearly below the best.

import test from 'node:test';
import assert from 'node:assert/strict';

import { transferSeries } from '../../web/static/js/logic/panel-series.js';
import { transferFindings } from '../../web/static/js/logic/transfer-findings.js';

const point = (direction, memory, bytes, gbps) => ({ direction, memory, bytes, gbps: { median: gbps, min: gbps, max: gbps } });

test('a CPU curve whose small copies are fastest is described as that', () => {
  const data = transferSeries([
    point('h2h', 'pageable', 1024, 30),
    point('h2h', 'pageable', 1 << 20, 20),
    point('h2h', 'pageable', 64 << 20, 8),
  ]);
  const [only, ...rest] = transferFindings(data, null, 'Test CPU');
  assert.equal(rest.length, 0);
  assert.equal(only.tone, 'warn');
  assert.match(only.text, /smallest copy \(1 KiB\) was the fastest at 30 GB\/s/);
  assert.match(only.text, /stay in the CPU's caches/);
  assert.doesNotMatch(only.text, /fixed (cost|overhead)/);
});

test('a CPU curve that rises with size, or peaks in the middle, says so', () => {
  const rising = transferSeries([point('h2h', 'pageable', 1024, 2), point('h2h', 'pageable', 1 << 20, 9)]);
  assert.match(transferFindings(rising, null, 'x')[0].text, /rose with size, from 2 GB\/s at 1 KiB to 9 GB\/s at 1 MiB/);
  const middle = transferSeries([
    point('h2h', 'pageable', 1024, 5),
    point('h2h', 'pageable', 256 << 10, 40),
    point('h2h', 'pageable', 64 << 20, 10),
  ]);
  assert.match(transferFindings(middle, null, 'x')[0].text, /peaked at 40 GB\/s for 256 KiB/);
});

test('a GPU curve: the small-copy penalty only when the data shows it', () => {
  const gpu = (small) => transferSeries([
    point('h2d', 'pinned', 1024, small), point('h2d', 'pinned', 64 << 20, 24),
    point('h2d', 'pageable', 1024, small / 2), point('h2d', 'pageable', 64 << 20, 12),
  ]);
  const slowSmall = transferFindings(gpu(0.5), 31.5, 'H100').map((f) => f.text);
  assert.match(slowSmall[0], /Fastest: Host → device, pinned at 64 MiB, 24 GB\/s, 76\.2% of the link's theoretical 31.5 GB\/s/);
  assert.match(slowSmall[1], /pinned is 2× as fast/);
  assert.match(slowSmall[2], /reached only 0\.5 GB\/s .* fixed cost of starting a copy/);
  const fastSmall = transferFindings(gpu(20), 31.5, 'H100').map((f) => f.text);
  assert.ok(fastSmall.every((t) => !/fixed cost of starting a copy outweighs/.test(t)), fastSmall.join('\n'));
  assert.match(fastSmall[2], /Even the smallest copy \(1 KiB\) reached 20 GB\/s/);
});

test('no data, no findings', () => {
  assert.deepEqual(transferFindings({ sizes: [], series: [] }, null, 'x'), []);
});
