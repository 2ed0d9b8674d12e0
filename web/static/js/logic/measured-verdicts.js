// Verdicts under the "read the loss every step" charts (break-it's log-every-step case
// and the training run's logging probe), computed from the numbers those panels show, on
// the backend that measured them. Two rules keep the text honest:
//  - a gap inside the runs' own spread is "no measurable difference", never a ratio;
//  - on the CPU a loss read waits for nothing (there is no device queue to drain), so a
//    gap measured there is not the read's cost, and the text says so instead of
//    presenting it as the lesson's effect. The GPU sentence explains what a sync does.
// No DOM here, so tests/js/measured-verdicts.test.mjs checks each case under node.

import { formatMs, formatSpread, formatTimes } from './panel-format.js';

/** Below this relative gap two medians are never called different, whatever the spread. */
export const MIN_RELATIVE_GAP = 0.05;

/**
 * The spread of a summary {median,min,max,q1?,q3?}: the interquartile range when the
 * server sent quartiles, else max − min. Non-finite parts count as no spread.
 */
export function spreadOf(s) {
  if (!s) return 0;
  if (Number.isFinite(s.q1) && Number.isFinite(s.q3)) return Math.max(0, s.q3 - s.q1);
  if (Number.isFinite(s.min) && Number.isFinite(s.max)) return Math.max(0, s.max - s.min);
  return 0;
}

/**
 * Compares medians `a` and `b` given the noise `noise` (ms) each carries: measurable
 * only when the gap exceeds the noise and MIN_RELATIVE_GAP of the smaller median.
 * Returns {measurable, ratio: a/b, diff: a − b}, or null without two positive medians.
 */
export function compareWithNoise(a, b, noise) {
  if (!Number.isFinite(a) || !Number.isFinite(b) || a <= 0 || b <= 0) return null;
  const diff = a - b;
  const gap = Math.abs(diff);
  const measurable = gap > Math.max(0, noise || 0) && gap > MIN_RELATIVE_GAP * Math.min(a, b);
  return { measurable, ratio: a / b, diff };
}

const GPU_WHY = 'On a GPU, reading the loss (loss.item()) is a sync point: the CPU waits until every queued step has finished, so it cannot queue the next step ahead, and reading every step costs time.';
const CPU_WHY = 'On the CPU backend the loss is already a number in host memory, so reading it waits for nothing and costs next to nothing.';

function wording(cmp, cpu, what) {
  if (!cmp.measurable) {
    return cpu
      ? { text: `No measurable difference: ${what} ${CPU_WHY} That is what this chart should show. ${GPU_WHY}`, tone: 'good', headline: 'no measurable difference' }
      : { text: `No measurable difference this time: ${what} ${GPU_WHY} When each step is long next to the wait, or the machine is busy, the effect can hide in the noise: run it again.`, tone: 'plain', headline: 'no measurable difference' };
  }
  const slower = cmp.diff > 0;
  const size = slower ? `${formatTimes(cmp.ratio)} slower` : `${formatTimes(1 / cmp.ratio)} faster`;
  if (cpu) {
    return {
      text: `Reading every step came out ${size} here, a gap larger than the runs' spread: ${what} ${CPU_WHY} So this gap is not the cost of the reads; something else on the machine slowed one run. Run it again. ${GPU_WHY}`,
      tone: 'warn',
      headline: `${size} (not from the reads)`,
    };
  }
  return slower
    ? { text: `Reading the loss every step made each step ${size}: ${what} ${GPU_WHY}`, tone: 'warn', headline: size }
    : { text: `Reading every step came out ${size}, which a sync cannot cause: ${what} Something else on the machine slowed the other run; run it again. ${GPU_WHY}`, tone: 'plain', headline: size };
}

/**
 * Break-it's log-every-step verdict from its `result` ({runs: [{log_every, step_ms}],
 * provenance.backend}): {text, tone, headline}, or null when the runs are missing.
 */
export function breakItLoggingVerdict(result) {
  const runs = (result && result.runs) || [];
  const every = runs.find((r) => r.log_every === 1);
  const sparse = runs.find((r) => r.log_every !== 1);
  if (!every || !sparse || !every.step_ms || !sparse.step_ms) return null;
  const noise = (spreadOf(every.step_ms) + spreadOf(sparse.step_ms)) / 2;
  const cmp = compareWithNoise(every.step_ms.median, sparse.step_ms.median, noise);
  if (!cmp) return null;
  const cpu = Boolean(result.provenance && result.provenance.backend === 'cpu');
  const what = `every step took ${formatSpread(every.step_ms, formatMs)} per step (median, min–max), every ${sparse.log_every} took ${formatSpread(sparse.step_ms, formatMs)}.`;
  return { ...wording(cmp, cpu, what), ...cmp };
}

/**
 * The training run's logging verdict from its `result` ({read_every_step_ms,
 * read_every_n_ms, step_ms, params.log_every, provenance.backend}). The probe gives one
 * mean per style, so the noise is the run's own step-to-step spread.
 */
export function trainingLoggingVerdict(result) {
  if (!result || !result.step_ms) return null;
  const every = Number(result.read_every_step_ms);
  const everyN = Number(result.read_every_n_ms);
  const cmp = compareWithNoise(every, everyN, spreadOf(result.step_ms));
  if (!cmp) return null;
  const cpu = Boolean(result.provenance && result.provenance.backend === 'cpu');
  const n = result.params && result.params.log_every;
  const what = `reading every step took ${formatMs(every)} per step and every ${n} steps ${formatMs(everyN)}, while single steps of this run ranged ${formatMs(result.step_ms.min)}–${formatMs(result.step_ms.max)}.`;
  return { ...wording(cmp, cpu, what), ...cmp };
}

/**
 * The timing trap's verdict from its `result` ({host_no_sync_ms, host_sync_ms,
 * underestimate_factor}) and how long the device worked after the CPU went quiet
 * (`afterMs`, from hiddenWork): the trap is claimed only when the unsynchronised timer
 * read measurably less than the synchronised one.
 */
export function timingTrapVerdict(result, afterMs, deviceWord) {
  const noSync = Number(result && result.host_no_sync_ms);
  const sync = Number(result && result.host_sync_ms);
  const cmp = compareWithNoise(sync, noSync, 0);
  if (!cmp) return null;
  if (!cmp.measurable || cmp.diff < 0) {
    return {
      text: `No measurable difference this run: the timer without synchronising read ${formatMs(noSync)} and the synchronised one ${formatMs(sync)}. The ${deviceWord} finished its work about as fast as the launches returned, so the trap did not show; the launches and the work still ran at different times (see the timeline).`,
      tone: 'plain',
      headline: 'no measurable difference',
      ...cmp,
    };
  }
  return {
    text: `The timer without synchronising read ${formatMs(noSync)}, ${formatTimes(cmp.ratio)} less than the ${formatMs(sync)} the work really took: it timed the launches, not the work. The ${deviceWord} kept working for ${formatMs(afterMs)} after the CPU lane went quiet.`,
    tone: 'warn',
    headline: formatTimes(cmp.ratio),
    ...cmp,
  };
}
