// Unit tests for the parallel race's timing model (web/static/js/logic/parallel-race.js):
// rounds, finishing times, the winner and the printed ratio must match the lesson
// (1,024 tasks: 8 cores need 128 rounds, 256 cores need 4, a 32× difference) and the
// server's fallback table (fallbacks.rs: rounds = ceil(tasks / cores)).
import { test } from 'node:test';
import { clampInt } from '../../web/static/js/logic/numbers.js';
import assert from 'node:assert/strict';
import {
  roundsNeeded,
  race,
  laneAt,
  formatRatio,
  verdict,
  animationMillis,
  LIMITS,
} from '../../web/static/js/logic/parallel-race.js';

test('rounds are ceil(tasks / cores)', () => {
  assert.equal(roundsNeeded(1024, 8), 128);
  assert.equal(roundsNeeded(1024, 256), 4);
  assert.equal(roundsNeeded(1000, 256), 4);
  assert.equal(roundsNeeded(1025, 256), 5);
  assert.equal(roundsNeeded(8, 256), 1);
  assert.equal(roundsNeeded(0, 8), 0);
  assert.equal(roundsNeeded(5, 0), 5, 'zero cores is treated as one');
});

test('the lesson defaults: GPU 32× sooner', () => {
  const r = race({ tasks: 1024, cpuCores: 8, gpuCores: 256 });
  assert.equal(r.cpu.rounds, 128);
  assert.equal(r.gpu.rounds, 4);
  assert.equal(r.winner, 'gpu');
  assert.equal(r.ratio, 32);
  assert.equal(formatRatio(r.ratio), '32×');
  assert.equal(verdict(r), 'The GPU finishes 32× sooner.');
  assert.equal(r.gpu.idleInLastRound, 0);
});

test('with 8 tasks both lanes need one round and 248 GPU cores idle', () => {
  const r = race({ tasks: 8, cpuCores: 8, gpuCores: 256 });
  assert.equal(r.cpu.rounds, 1);
  assert.equal(r.gpu.rounds, 1);
  assert.equal(r.winner, 'tie');
  assert.equal(verdict(r), 'Both lanes finish at the same time.');
  assert.equal(r.gpu.busyInLastRound, 8);
  assert.equal(r.gpu.idleInLastRound, 248);
});

test('faster CPU cores narrow the gap, and can win', () => {
  const four = race({ tasks: 1024, cpuCores: 8, gpuCores: 256, cpuCoreSpeed: 4 });
  assert.equal(four.cpu.finishTime, 32);
  assert.equal(four.ratio, 8);
  assert.equal(verdict(four), 'The GPU finishes 8× sooner.');
  const small = race({ tasks: 8, cpuCores: 8, gpuCores: 256, cpuCoreSpeed: 4 });
  assert.equal(small.winner, 'cpu');
  assert.equal(verdict(small), 'The CPU finishes 4× sooner.');
});

test('non-integer ratios print with two decimals', () => {
  const r = race({ tasks: 1000, cpuCores: 8, gpuCores: 256 });
  assert.equal(r.cpu.rounds, 125);
  assert.equal(formatRatio(r.ratio), '31.25×');
  assert.equal(formatRatio(10 / 3), '3.33×');
  assert.equal(formatRatio(2.5), '2.50×');
});

test('laneAt counts finished rounds and tasks in flight', () => {
  const { cpu, gpu } = race({ tasks: 1000, cpuCores: 8, gpuCores: 256 });
  assert.deepEqual(laneAt(gpu, 0), { roundsDone: 0, tasksDone: 0, tasksRunning: 256, finished: false });
  assert.deepEqual(laneAt(gpu, 3.5), { roundsDone: 3, tasksDone: 768, tasksRunning: 232, finished: false });
  assert.deepEqual(laneAt(gpu, 4), { roundsDone: 4, tasksDone: 1000, tasksRunning: 0, finished: true });
  assert.deepEqual(laneAt(gpu, 99), { roundsDone: 4, tasksDone: 1000, tasksRunning: 0, finished: true });
  assert.equal(laneAt(cpu, 124.99).tasksDone, 992);
  assert.equal(laneAt(cpu, 124.99).tasksRunning, 8);
});

test('laneAt with fast CPU cores uses their shorter round', () => {
  const { cpu } = race({ tasks: 64, cpuCores: 8, gpuCores: 256, cpuCoreSpeed: 2 });
  assert.equal(cpu.rounds, 8);
  assert.equal(cpu.finishTime, 4);
  assert.equal(laneAt(cpu, 2).roundsDone, 4);
  assert.equal(laneAt(cpu, 0.3).roundsDone, 0);
  // 0.1 + 0.2 style float noise must not lose a round at an exact boundary.
  assert.equal(laneAt({ ...cpu, roundTime: 0.1 }, 0.3).roundsDone, 3);
});

test('clampInt keeps values inside the limits and ignores junk', () => {
  assert.equal(clampInt('300', LIMITS.cpuCores, 8), 128);
  assert.equal(clampInt('0', LIMITS.tasks, 5), 1);
  assert.equal(clampInt('', LIMITS.tasks, 5), 5);
  assert.equal(clampInt('abc', LIMITS.tasks, 5), 5);
  assert.equal(clampInt('12.6', LIMITS.tasks, 5), 13);
});

test('the animation lasts between 0.6 and 3 seconds', () => {
  assert.equal(animationMillis(race({ tasks: 1024, cpuCores: 8, gpuCores: 256 })), 3000);
  assert.equal(animationMillis(race({ tasks: 8, cpuCores: 8, gpuCores: 256 })), 600);
  assert.equal(animationMillis(race({ tasks: 64, cpuCores: 1, gpuCores: 256 })), 1600);
});
