// Unit tests for the thread hierarchy's index arithmetic
// (web/static/js/logic/thread-hierarchy.js): the lesson's worked example (thread 37 of
// block 2, 256 threads per block: i = 549, warp 1, lane 5), the guard for the 1,000-element
// relu launch of 4 × 256 threads, and the fallback's warp counts.
import { test } from 'node:test';
import { clampInt } from '../../web/static/js/logic/numbers.js';
import assert from 'node:assert/strict';
import {
  globalIndex,
  warpOf,
  laneOf,
  warpsPerBlock,
  threadsInWarp,
  defaultElements,
  describe,
  workedSteps,
  LIMITS,
  LEVELS,
} from '../../web/static/js/logic/thread-hierarchy.js';

test('the lesson example: block 2, thread 37, 256 per block', () => {
  assert.equal(globalIndex(2, 256, 37), 549);
  assert.equal(warpOf(37), 1);
  assert.equal(laneOf(37), 5);
});

test('warp and lane at the boundaries', () => {
  assert.equal(warpOf(0), 0);
  assert.equal(laneOf(0), 0);
  assert.equal(warpOf(31), 0);
  assert.equal(laneOf(31), 31);
  assert.equal(warpOf(32), 1);
  assert.equal(laneOf(32), 0);
  assert.equal(warpOf(255), 7);
  assert.equal(laneOf(255), 31);
  assert.equal(warpOf(1023), 31);
});

test('warps per block round up, and the last warp may be partial', () => {
  assert.equal(warpsPerBlock(256), 8);
  assert.equal(warpsPerBlock(1024), 32);
  assert.equal(warpsPerBlock(100), 4);
  assert.equal(threadsInWarp(3, 100), 4);
  assert.equal(threadsInWarp(0, 100), 32);
  assert.equal(threadsInWarp(4, 100), 0);
});

test('the lesson launch covers 1,000 elements with 4 blocks of 256', () => {
  assert.equal(defaultElements(4, 256), 1000);
  assert.equal(defaultElements(8, 256), 2048, 'a grid that is not the lesson one covers itself');
  assert.equal(defaultElements(2, 256), 512);
  const last = describe({ gridBlocks: 4, blockDim: 256, blockIdx: 3, threadIdx: 255, elements: 1000 });
  assert.equal(last.i, 1023);
  assert.equal(last.inBounds, false);
  assert.equal(last.idleThreads, 24);
  assert.equal(last.totalThreads, 1024);
  assert.equal(last.totalWarps, 32);
  assert.equal(last.blocksNeeded, 4);
  const edge = describe({ gridBlocks: 4, blockDim: 256, blockIdx: 3, threadIdx: 231, elements: 1000 });
  assert.equal(edge.i, 999);
  assert.equal(edge.inBounds, true);
  assert.equal(describe({ gridBlocks: 4, blockDim: 256, blockIdx: 3, threadIdx: 232, elements: 1000 }).inBounds, false);
});

test('a grid too small for n leaves elements uncovered and says how many blocks it needs', () => {
  const small = describe({ gridBlocks: 4, blockDim: 128, blockIdx: 0, threadIdx: 0, elements: 1000 });
  assert.equal(small.totalThreads, 512);
  assert.equal(small.totalWarps, 16);
  assert.equal(small.uncovered, 488);
  assert.equal(small.idleThreads, 0);
  assert.equal(small.blocksNeeded, 8);
});

test('the arithmetic is written out with the numbers substituted', () => {
  const steps = workedSteps({ blockDim: 256, blockIdx: 2, threadIdx: 37, elements: 1000 });
  assert.equal(steps.index, 'i = blockIdx.x × blockDim.x + threadIdx.x = 2 × 256 + 37 = 549');
  assert.equal(steps.warp, 'warp = ⌊threadIdx.x / 32⌋ = ⌊37 / 32⌋ = 1');
  assert.equal(steps.lane, 'lane = threadIdx.x mod 32 = 37 mod 32 = 5');
  assert.equal(steps.guard, 'i < n: 549 < 1,000, so this thread handles element 549');
  const over = workedSteps({ blockDim: 256, blockIdx: 3, threadIdx: 240, elements: 1000 });
  assert.equal(over.index, 'i = blockIdx.x × blockDim.x + threadIdx.x = 3 × 256 + 240 = 1,008');
  assert.equal(over.guard, 'i < n fails: 1,008 ≥ 1,000, so the guard makes this thread do nothing');
});

test('the levels say what their members share', () => {
  assert.deepEqual(LEVELS.map((l) => l.id), ['grid', 'block', 'warp', 'thread']);
  assert.match(LEVELS[1].shares, /shared memory/);
  assert.match(LEVELS[3].shares, /registers/);
});

test('clampInt bounds block sizes at 1,024', () => {
  assert.equal(clampInt('2048', LIMITS.blockThreads, 256), 1024);
  assert.equal(clampInt('x', LIMITS.blockThreads, 256), 256);
});
