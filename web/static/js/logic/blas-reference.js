// How the matmul panel's CPU line compares with an optimised library on this machine.
// The crossover lesson races the GPU against GPU Lab's own CPU SGEMM; were that product
// slower than OpenBLAS on the same CPU, the GPU would seem to win earlier than it does.
// `tests/bench/sgemm.sh` records numpy's (OpenBLAS's) times on the server's CPU, and the
// server serves that record in GET /api/device as `device.cpu.blas_reference` only when
// it names this CPU (server/host/blas_reference.rs). Here each size both have is
// compared, OpenBLAS's recorded ms ÷ this run's median ms, and said in one sentence
// with where and when the reference comes from; with no record, how to make one.
// Pure functions, no DOM, so tests/js/blas-reference.test.mjs runs them under node.

/**
 * Smallest side compared: below it a product takes microseconds, and the recorded and
 * live times differ by scheduling noise more than by library (GPU Lab's choice; the
 * bench's own table shows 128 swinging 1.25–1.74× between rounds).
 */
export const MIN_COMPARED = 256;

/** Below this share of the library's speed the sentence is a warning (GPU Lab's choice,
 * as ceiling-place.js's NEAR). */
export const WELL_BELOW = 0.8;

/** The sizes ≥ MIN_COMPARED that the record and `rows` both timed: [{size, share}]. */
export function comparedSizes(rows, reference) {
  const live = new Map((rows || [])
    .filter((r) => r && r.cpu_ms && r.cpu_ms.median > 0)
    .map((r) => [r.size, r.cpu_ms.median]));
  return ((reference && reference.rows) || [])
    .filter((r) => r.size >= MIN_COMPARED && r.numpy_ms > 0 && live.has(r.size))
    .map((r) => ({ size: r.size, share: r.numpy_ms / live.get(r.size) }))
    .sort((a, b) => a.size - b.size);
}

const percent = (share) => `${Math.round(share * 100)}%`;

/** "2026-11-27" from the record's ISO time (the whole string when it is not one). */
function day(recordedAt) {
  const match = /^\d{4}-\d{2}-\d{2}/.exec(recordedAt || '');
  return match ? match[0] : String(recordedAt || 'an unknown date');
}

/** "86% at n = 256, 101% at 512 and 94% at 1024". */
function each(points) {
  const parts = points.map((p, i) => `${percent(p.share)} at ${i === 0 ? 'n = ' : ''}${p.size}`);
  return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}` : parts[0];
}

const HOW_TO_RECORD = 'To compare it with OpenBLAS on this machine, run `bash tests/bench/sgemm.sh` on the server and restart it.';

/**
 * The sentence for a finished matmul result's `rows` against `reference` (the card's
 * `cpu.blas_reference`, or null): {text, tone, shares}, `shares` being what was compared.
 */
export function blasComparison(rows, reference) {
  if (!reference) {
    return {
      text: `The CPU line is GPU Lab's own SGEMM, and no OpenBLAS reference has been recorded on this machine, so this panel cannot say how close it is to an optimised library. ${HOW_TO_RECORD}`,
      tone: 'plain',
      shares: [],
    };
  }
  const blas = reference.blas || "numpy's BLAS";
  const load = reference.load_average ? ` at a load average of ${reference.load_average.before[0]}` : '';
  const source = `The reference is ${reference.library}, recorded by \`tests/bench/sgemm.sh\` on ${day(reference.recorded_at)}${load}, not during this run`;
  const points = comparedSizes(rows, reference);
  if (points.length === 0) {
    const recorded = reference.rows.map((r) => r.size).filter((n) => n >= MIN_COMPARED).sort((a, b) => a - b);
    const timed = (rows || []).filter((r) => r && r.cpu_ms && r.cpu_ms.median > 0).map((r) => r.size);
    const largest = Math.max(0, ...timed);
    const why = recorded.length === 0
      ? `the ${blas} reference has no size from n = ${MIN_COMPARED} up; run \`bash tests/bench/sgemm.sh\` again with its default sizes`
      : `this run's CPU line has none of the reference's sizes (n = ${recorded.join(', ')})${largest < recorded[0] ? `; choose a largest matrix side of at least ${recorded[0]}` : ''}`;
    return {
      text: `Nothing to compare with ${blas} yet: ${why}. ${source}.`,
      tone: 'plain',
      shares: [],
    };
  }
  const shares = points.map((p) => p.share);
  const [low, high] = [Math.min(...shares), Math.max(...shares)];
  const level = points.length === 1
    ? `${percent(low)} of ${blas}'s speed on this machine at n = ${points[0].size}`
    : `${percent(low) === percent(high) ? percent(low) : `${Math.round(low * 100)}–${percent(high)}`} of ${blas}'s speed on this machine (${each(points)})`;
  const meaning = low < 1
    ? `Where it is below 100%, the GPU's lead over this CPU line is larger than its lead over ${blas} would be.`
    : `At every size compared it was at least as fast as ${blas}, so a slow CPU side does not flatter the GPU here.`;
  return {
    text: `GPU Lab's own CPU SGEMM, the CPU line above, ran at ${level}. ${source}, so the percentage also moves with how busy the machine was then and now. ${meaning}`,
    tone: low < WELL_BELOW ? 'warn' : low >= 1 ? 'good' : 'plain',
    shares,
  };
}
