// Unit tests of the token positions arithmetic (lesson 7): 32 × 128 = 4,096; halving
// batch or sequence halves positions (50%); halving the sequence leaves 25% of the
// attention scores; the byte sizes match the lesson's 12,582,912 and 25,165,824.
import { test } from 'node:test';
import { thousands } from '../../web/static/js/logic/numbers.js';
import assert from 'node:assert/strict';
import {
  attentionScoreBytes,
  compare,
  formatPercent,
  halve,
  hiddenStateBytes,
  megabytes,
  tokenPositions,
} from '../../web/static/js/logic/token-positions.js';

const start = { batch: 32, seq: 128 };

test('32 × 128 = 4,096 token positions', () => {
  assert.equal(tokenPositions(32, 128), 4096);
  assert.equal(thousands(4096), '4,096');
});

test('halving the batch halves positions and attention scores', () => {
  const c = compare(start, { batch: 16, seq: 128 });
  assert.equal(c.positions, 2048);
  assert.equal(formatPercent(c.positionsPercent), '50%');
  assert.equal(formatPercent(c.attentionPercent), '50%');
});

test('halving the sequence halves positions and quarters attention scores', () => {
  const c = compare(start, { batch: 32, seq: 64 });
  assert.equal(c.positions, 2048);
  assert.equal(formatPercent(c.positionsPercent), '50%');
  assert.equal(formatPercent(c.attentionPercent), '25%');
  const twice = compare(start, { batch: 32, seq: 32 });
  assert.equal(formatPercent(twice.attentionPercent), '6.25%');
  const doubled = compare(start, { batch: 32, seq: 256 });
  assert.equal(formatPercent(doubled.attentionPercent), '400%');
});

test('byte sizes match the lesson', () => {
  assert.equal(hiddenStateBytes(32, 128), 12_582_912);
  assert.equal(megabytes(hiddenStateBytes(32, 128)), '12.58 MB');
  assert.equal(attentionScoreBytes(32, 128), 25_165_824);
  assert.equal(megabytes(attentionScoreBytes(32, 128)), '25.17 MB');
  assert.equal(megabytes(attentionScoreBytes(32, 256)), '100.66 MB'); // lesson: about 100.7 MB
});

test('halving never goes below one', () => {
  assert.equal(halve(32), 16);
  assert.equal(halve(3), 1);
  assert.equal(halve(1), 1);
  assert.equal(formatPercent(100 / 3), '33.33%');
});
