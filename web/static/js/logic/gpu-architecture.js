// GPU architecture explorer, the arithmetic: total CUDA cores from SMs × cores per SM,
// and a toy block scheduler that hands a kernel's blocks to SMs in waves. No DOM here,
// so node's test runner checks the numbers the widget (widgets/gpu-architecture.js)
// draws and animates.
//
// The scheduling model, stated plainly because it is a simplification:
// - the launch is the lesson's relu on a (1024, 512) tensor: 524,288 threads in blocks of
//   256, which is 2,048 blocks (the student can change the block count);
// - each SM runs one block at a time (real SMs keep several resident when registers and
//   shared memory allow) and takes the next waiting block when it finishes, so with equal
//   blocks the work goes in waves of at most `sms` blocks;
// - a block of 256 threads on an SM with 64 cores needs ceil(256 / 64) = 4 "core steps",
//   one element per core per step, so cores per SM set how long a wave lasts.

/** The lesson's relu launch. */
export const RELU_ELEMENTS = 1024 * 512;
export const THREADS_PER_BLOCK = 256;
export const DEFAULT_BLOCKS = RELU_ELEMENTS / THREADS_PER_BLOCK;

/** Input limits: wide enough for every real chip, small enough to draw every SM. */
export const LIMITS = {
  sms: { min: 1, max: 160 },
  coresPerSm: { min: 8, max: 256 },
  blocks: { min: 1, max: 100000 },
};

/** Real chips to load with one press. Counts are FP32 CUDA cores. */
export const PRESETS = [
  { id: 'a100', label: 'A100', sms: 108, coresPerSm: 64 },
  { id: 'h100', label: 'H100 SXM', sms: 132, coresPerSm: 128 },
  { id: 'gtx1650', label: 'GTX 1650', sms: 14, coresPerSm: 64 },
];

/** Total CUDA cores. */
export function totalCores(sms, coresPerSm) {
  return sms * coresPerSm;
}

/** Core steps one block needs: its threads spread over the SM's cores. */
export function stepsPerBlock(threadsPerBlock, coresPerSm) {
  return Math.ceil(threadsPerBlock / Math.max(1, coresPerSm));
}

/** The whole launch: waves, the last wave's size and idle SMs, total core steps. */
export function plan({ sms, coresPerSm, blocks, threadsPerBlock = THREADS_PER_BLOCK }) {
  const waves = Math.ceil(blocks / sms);
  const fullWaves = Math.floor(blocks / sms);
  const lastWaveBlocks = blocks - (waves - 1) * sms;
  const steps = stepsPerBlock(threadsPerBlock, coresPerSm);
  return {
    sms,
    coresPerSm,
    blocks,
    threadsPerBlock,
    cores: totalCores(sms, coresPerSm),
    waves,
    fullWaves,
    lastWaveBlocks,
    idleSmsInLastWave: sms - lastWaveBlocks,
    stepsPerBlock: steps,
    totalSteps: waves * steps,
  };
}

/**
 * The state after `stepsDone` core steps (0 … totalSteps): which wave runs, how far its
 * blocks have got, and how many blocks wait, run and are done.
 */
export function frameAt(launch, stepsDone) {
  const clamped = Math.min(launch.totalSteps, Math.max(0, stepsDone));
  if (clamped === launch.totalSteps) {
    return {
      wave: launch.waves,
      stepInBlock: 0,
      running: 0,
      done: launch.blocks,
      waiting: 0,
      finished: true,
    };
  }
  const wave = Math.floor(clamped / launch.stepsPerBlock) + 1; // 1-based, the wave running
  const stepInBlock = clamped - (wave - 1) * launch.stepsPerBlock;
  const done = (wave - 1) * launch.sms;
  const running = Math.min(launch.sms, launch.blocks - done);
  return {
    wave,
    stepInBlock,
    running,
    done,
    waiting: launch.blocks - done - running,
    finished: false,
  };
}

/** The block (0-based) that SM `sm` runs in wave `wave` (1-based), or -1 if it sits idle. */
export function blockOn(launch, sm, wave) {
  const block = (wave - 1) * launch.sms + sm;
  return block < launch.blocks ? block : -1;
}

/** Wall-clock length of the animation: 40 ms a step, at most 4 s, at least 0.8 s. */
export function animationMillis(launch) {
  return Math.min(4000, Math.max(800, launch.totalSteps * 40));
}

