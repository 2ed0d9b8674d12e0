// Thread hierarchy, the arithmetic: a kernel launch is a grid of blocks of threads, and
// the hardware runs a block's threads in warps of 32. From blockIdx.x, blockDim.x and
// threadIdx.x this works out the thread's global index, its warp and lane, and whether
// the index guard lets it touch an element. No DOM here, so node's test runner checks
// the numbers the widget (widgets/thread-hierarchy.js) prints.

import { thousands } from './numbers.js';

export const WARP_SIZE = 32;

/** The largest grid the widget draws block by block, and CUDA's block-size limit. */
export const LIMITS = {
  gridBlocks: { min: 1, max: 64 },
  blockThreads: { min: 1, max: 1024 },
  elements: { min: 1, max: 65536 },
};

/** Block sizes the widget offers; the directive's own size is added if it is not here. */
export const BLOCK_SIZES = [32, 64, 128, 256, 512, 1024];

/** The four levels and what the members of each share (as the lesson's table), in a sentence. */
export const LEVELS = [
  {
    id: 'grid',
    name: 'Grid',
    what: 'all the blocks of one kernel launch',
    shares: 'device memory (HBM) and the L2 cache',
    sentence: 'All its blocks share device memory (HBM) and the L2 cache; blocks cannot wait for each other.',
  },
  {
    id: 'block',
    name: 'Block',
    what: 'a group of at most 1,024 threads that runs on one SM',
    shares: "that SM's shared memory; its threads can wait for each other at a barrier (__syncthreads())",
    sentence: "Its threads share that SM's shared memory and can wait for each other at a barrier (__syncthreads()).",
  },
  {
    id: 'warp',
    name: 'Warp',
    what: '32 consecutive threads of a block',
    shares: 'one instruction at a time: all 32 lanes execute it together, each on its own data',
    sentence: 'Its 32 threads share one instruction at a time, each lane on its own data; if they branch apart, the warp runs both paths in turn.',
  },
  {
    id: 'thread',
    name: 'Thread',
    what: 'one instance of the kernel',
    shares: 'nothing: its registers are its own',
    sentence: 'It shares nothing: its registers are its own, and its index picks its element.',
  },
];

/** i = blockIdx.x × blockDim.x + threadIdx.x */
export function globalIndex(blockIdx, blockDim, threadIdx) {
  return blockIdx * blockDim + threadIdx;
}

/** The warp a thread belongs to within its block: floor(threadIdx.x / 32). */
export function warpOf(threadIdx) {
  return Math.floor(threadIdx / WARP_SIZE);
}

/** The thread's lane within its warp: threadIdx.x mod 32. */
export function laneOf(threadIdx) {
  return threadIdx % WARP_SIZE;
}

/** Warps in a block: a last, partial warp still counts (it runs with lanes switched off). */
export function warpsPerBlock(blockDim) {
  return Math.ceil(blockDim / WARP_SIZE);
}

/** Threads in warp `warp` of a block of `blockDim` threads (the last may be partial). */
export function threadsInWarp(warp, blockDim) {
  return Math.max(0, Math.min(WARP_SIZE, blockDim - warp * WARP_SIZE));
}

/**
 * The elements a launch covers by default: the lesson's 1,000 when its grid is the one
 * that covers 1,000 (the last block overhangs), otherwise exactly the grid's threads.
 */
export function defaultElements(gridBlocks, blockThreads) {
  const total = gridBlocks * blockThreads;
  return total >= 1000 && total - blockThreads < 1000 ? 1000 : total;
}

/** Everything the widget shows about one thread of one launch. */
export function describe({ gridBlocks, blockDim, blockIdx, threadIdx, elements }) {
  const i = globalIndex(blockIdx, blockDim, threadIdx);
  const totalThreads = gridBlocks * blockDim;
  return {
    i,
    warp: warpOf(threadIdx),
    lane: laneOf(threadIdx),
    warpsPerBlock: warpsPerBlock(blockDim),
    totalThreads,
    totalWarps: gridBlocks * warpsPerBlock(blockDim),
    inBounds: i < elements,
    idleThreads: Math.max(0, totalThreads - elements),
    uncovered: Math.max(0, elements - totalThreads),
    blocksNeeded: Math.ceil(elements / blockDim),
  };
}

/** The arithmetic written out, as lines of text. */
export function workedSteps({ blockDim, blockIdx, threadIdx, elements }) {
  const i = globalIndex(blockIdx, blockDim, threadIdx);
  const n = thousands(elements);
  return {
    index: `i = blockIdx.x × blockDim.x + threadIdx.x = ${blockIdx} × ${blockDim} + ${threadIdx} = ${thousands(i)}`,
    warp: `warp = ⌊threadIdx.x / 32⌋ = ⌊${threadIdx} / 32⌋ = ${warpOf(threadIdx)}`,
    lane: `lane = threadIdx.x mod 32 = ${threadIdx} mod 32 = ${laneOf(threadIdx)}`,
    guard:
      i < elements
        ? `i < n: ${thousands(i)} < ${n}, so this thread handles element ${thousands(i)}`
        : `i < n fails: ${thousands(i)} ≥ ${n}, so the guard makes this thread do nothing`,
  };
}

