// Unit tests for the GPU architecture explorer's arithmetic
// (web/static/js/logic/gpu-architecture.js): total cores as the lesson and fallback state
// them (108 × 64 = 6,912; H100 SXM 132 × 128 = 16,896), and the toy block scheduler's
// waves for the lesson's relu launch (2,048 blocks of 256 threads).
import { test } from 'node:test';
import { clampInt } from '../../web/static/js/logic/numbers.js';
import assert from 'node:assert/strict';
import {
  totalCores,
  stepsPerBlock,
  plan,
  frameAt,
  blockOn,
  animationMillis,
  PRESETS,
  DEFAULT_BLOCKS,
  RELU_ELEMENTS,
  LIMITS,
} from '../../web/static/js/logic/gpu-architecture.js';

test('total cores are SMs × cores per SM', () => {
  assert.equal(totalCores(108, 64), 6912);
  assert.equal(totalCores(132, 128), 16896);
  assert.equal(totalCores(14, 64), 896);
  const byId = Object.fromEntries(PRESETS.map((p) => [p.id, totalCores(p.sms, p.coresPerSm)]));
  assert.deepEqual(byId, { a100: 6912, h100: 16896, gtx1650: 896 });
});

test('the relu launch is 524,288 threads in 2,048 blocks of 256', () => {
  assert.equal(RELU_ELEMENTS, 524288);
  assert.equal(DEFAULT_BLOCKS, 2048);
});

test('A100: 19 waves, the last one 104 blocks with 4 SMs idle, 76 core steps', () => {
  const a100 = plan({ sms: 108, coresPerSm: 64, blocks: 2048 });
  assert.equal(a100.cores, 6912);
  assert.equal(a100.waves, 19);
  assert.equal(a100.fullWaves, 18);
  assert.equal(a100.lastWaveBlocks, 104);
  assert.equal(a100.idleSmsInLastWave, 4);
  assert.equal(a100.stepsPerBlock, 4);
  assert.equal(a100.totalSteps, 76);
});

test('a 14-SM card needs many more waves for the same launch', () => {
  const small = plan({ sms: 14, coresPerSm: 64, blocks: 2048 });
  assert.equal(small.waves, 147);
  assert.equal(small.fullWaves, 146);
  assert.equal(small.lastWaveBlocks, 4);
  assert.equal(small.idleSmsInLastWave, 10);
  assert.equal(small.totalSteps, 588);
});

test('H100 SXM: 16 waves of 2 steps', () => {
  const h100 = plan({ sms: 132, coresPerSm: 128, blocks: 2048 });
  assert.equal(h100.waves, 16);
  assert.equal(h100.lastWaveBlocks, 68);
  assert.equal(h100.stepsPerBlock, 2);
  assert.equal(h100.totalSteps, 32);
});

test('an exact fit leaves no idle SM; fewer blocks than SMs is one partial wave', () => {
  const exact = plan({ sms: 108, coresPerSm: 64, blocks: 216 });
  assert.equal(exact.waves, 2);
  assert.equal(exact.lastWaveBlocks, 108);
  assert.equal(exact.idleSmsInLastWave, 0);
  const few = plan({ sms: 108, coresPerSm: 64, blocks: 10 });
  assert.equal(few.waves, 1);
  assert.equal(few.fullWaves, 0);
  assert.equal(few.idleSmsInLastWave, 98);
});

test('steps per block round up when cores do not divide the block', () => {
  assert.equal(stepsPerBlock(256, 64), 4);
  assert.equal(stepsPerBlock(256, 100), 3);
  assert.equal(stepsPerBlock(256, 256), 1);
  assert.equal(stepsPerBlock(256, 512), 1);
});

test('frameAt walks the launch wave by wave', () => {
  const a100 = plan({ sms: 108, coresPerSm: 64, blocks: 2048 });
  assert.deepEqual(frameAt(a100, 0), { wave: 1, stepInBlock: 0, running: 108, done: 0, waiting: 1940, finished: false });
  assert.deepEqual(frameAt(a100, 5), { wave: 2, stepInBlock: 1, running: 108, done: 108, waiting: 1832, finished: false });
  assert.deepEqual(frameAt(a100, 73), { wave: 19, stepInBlock: 1, running: 104, done: 1944, waiting: 0, finished: false });
  assert.deepEqual(frameAt(a100, 76), { wave: 19, stepInBlock: 0, running: 0, done: 2048, waiting: 0, finished: true });
  assert.equal(frameAt(a100, 500).finished, true);
});

test('blockOn numbers blocks wave by wave and leaves the tail SMs idle', () => {
  const a100 = plan({ sms: 108, coresPerSm: 64, blocks: 2048 });
  assert.equal(blockOn(a100, 0, 1), 0);
  assert.equal(blockOn(a100, 107, 1), 107);
  assert.equal(blockOn(a100, 0, 2), 108);
  assert.equal(blockOn(a100, 103, 19), 2047);
  assert.equal(blockOn(a100, 104, 19), -1);
});

test('animation time is 40 ms a step, clamped to 0.8–4 s', () => {
  assert.equal(animationMillis(plan({ sms: 108, coresPerSm: 64, blocks: 2048 })), 3040);
  assert.equal(animationMillis(plan({ sms: 14, coresPerSm: 64, blocks: 2048 })), 4000);
  assert.equal(animationMillis(plan({ sms: 132, coresPerSm: 128, blocks: 2048 })), 1280);
  assert.equal(animationMillis(plan({ sms: 108, coresPerSm: 256, blocks: 10 })), 800);
});

test('clampInt keeps SM counts in range', () => {
  assert.equal(clampInt('500', LIMITS.sms, 108), 160);
  assert.equal(clampInt('0', LIMITS.sms, 108), 1);
  assert.equal(clampInt('', LIMITS.sms, 108), 108);
});
