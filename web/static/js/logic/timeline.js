// Timeline logic (lesson 5, "Asynchronous execution and honest timing"): when the CPU
// launches each step of a loop and when the GPU runs it, with or without a sync point such
// as loss.item(). Pure functions, no DOM, so the tests can check the numbers the widget
// draws: the lesson's 3 ms of CPU and 10 ms of GPU per step give 10 ms against 13 ms per
// step, and a host timer that never synchronises sees only the CPU's share.
//
// The model is deliberately simple, the one the lesson's formulas use: each step's kernels
// start when the CPU has finished launching that step and the GPU is free; a sync point
// after a step makes the CPU wait until the GPU has finished that step.

export const DEFAULT_CPU_MS = 3;
export const DEFAULT_GPU_MS = 10;
export const DEFAULT_STEPS = 8;

/**
 * Simulates `steps` steps. `syncAfter(step)` says whether loss.item() follows step `step`
 * (1-based). Returns the CPU and GPU lane segments (milliseconds) and the measurements.
 */
export function simulate({ steps, cpuMs, gpuMs, syncAfter }) {
  const cpu = [];
  const gpu = [];
  let cpuClock = 0;
  let gpuFree = 0;
  let gpuIdle = 0;
  for (let step = 1; step <= steps; step += 1) {
    const launchEnd = cpuClock + cpuMs;
    cpu.push({ step, kind: 'launch', start: cpuClock, end: launchEnd });
    const start = Math.max(launchEnd, gpuFree);
    if (step > 1) gpuIdle += start - gpuFree;
    gpu.push({ step, start, end: start + gpuMs });
    gpuFree = start + gpuMs;
    cpuClock = launchEnd;
    if (syncAfter(step) && gpuFree > cpuClock) {
      cpu.push({ step, kind: 'wait', start: cpuClock, end: gpuFree });
      cpuClock = gpuFree;
    }
  }
  const hostNoSyncMs = cpuClock;
  const hostSyncMs = Math.max(cpuClock, gpuFree);
  return {
    cpu,
    gpu,
    syncSteps: range(steps).filter((step) => syncAfter(step)),
    hostNoSyncMs,
    hostSyncMs,
    missedMs: hostSyncMs - hostNoSyncMs,
    gpuIdleMs: gpuIdle,
    perStepMs: hostSyncMs / steps,
    cpuWaitMs: cpu.filter((s) => s.kind === 'wait').reduce((sum, s) => sum + s.end - s.start, 0),
  };
}

/** The widget's marker as a schedule: `position` 0 = nowhere, k = after step k. */
export function markerSchedule(position, everyStep) {
  if (everyStep) return () => true;
  return (step) => step === position;
}

/** The longest any schedule can take: a sync on every step, steps × (CPU + GPU). */
export function worstCaseMs(steps, cpuMs, gpuMs) {
  return steps * (cpuMs + gpuMs);
}

/** Steady-state per-step time from the lesson's formulas. */
export function steadyStateMs(cpuMs, gpuMs, syncEveryStep) {
  return syncEveryStep ? cpuMs + gpuMs : Math.max(cpuMs, gpuMs);
}

/** 24 → "24 ms", 10.375 → "10.38 ms". */
export function formatMs(ms) {
  const rounded = Math.round(ms * 100) / 100;
  return Number.isInteger(rounded) ? `${rounded} ms` : `${rounded.toFixed(2)} ms`;
}

/** Axis ticks every `step` ms up to `maxMs`, with a step that gives about five labels. */
export function axisTicks(maxMs) {
  const raw = maxMs / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const ticks = [];
  for (let t = 0; t <= maxMs + 1e-9; t += step) ticks.push(Math.round(t * 1e6) / 1e6);
  return ticks;
}

function range(n) {
  return Array.from({ length: n }, (_, i) => i + 1);
}
