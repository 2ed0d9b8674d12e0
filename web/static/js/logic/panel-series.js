// Reshaping experiment results into chart series and headline numbers: the transfer
// sweep into one series per direction × memory kind, the matmul sweep into time and
// GFLOP/s per backend with the crossover size, the training run's logging cost, the
// timing trap's timeline extent. Pure functions over the server's JSON (server/gpu/*.rs),
// tested in tests/js/panel-series.test.mjs; the panels only draw what these return.

/** Display order and wording of the transfer series. */
export const TRANSFER_KINDS = [
  { key: 'h2d-pinned', direction: 'h2d', memory: 'pinned', label: 'Host → device, pinned', short: 'H→D pinned', tone: 'accent', dash: false },
  { key: 'd2h-pinned', direction: 'd2h', memory: 'pinned', label: 'Device → host, pinned', short: 'D→H pinned', tone: 'note', dash: false },
  { key: 'h2d-pageable', direction: 'h2d', memory: 'pageable', label: 'Host → device, pageable', short: 'H→D pageable', tone: 'accent', dash: true },
  { key: 'd2h-pageable', direction: 'd2h', memory: 'pageable', label: 'Device → host, pageable', short: 'D→H pageable', tone: 'note', dash: true },
  { key: 'h2h-pageable', direction: 'h2h', memory: 'pageable', label: 'Host → host memcpy (CPU backend)', short: 'Host memcpy', tone: 'warn', dash: false },
];

/**
 * The transfer result's points as aligned series: `sizes` ascending, and for each kind
 * present a `median`, `min` and `max` array (null where that size is missing).
 */
export function transferSeries(points) {
  const list = Array.isArray(points) ? points : [];
  const sizes = [...new Set(list.map((p) => p.bytes))].sort((a, b) => a - b);
  const series = [];
  for (const kind of TRANSFER_KINDS) {
    const mine = list.filter((p) => p.direction === kind.direction && p.memory === kind.memory);
    if (mine.length === 0) continue;
    const bySize = new Map(mine.map((p) => [p.bytes, p.gbps]));
    const pick = (field) => sizes.map((s) => (bySize.has(s) ? bySize.get(s)[field] : null));
    series.push({ ...kind, median: pick('median'), min: pick('min'), max: pick('max'), q1: pick('q1'), q3: pick('q3'), summaries: sizes.map((s) => (bySize.has(s) ? bySize.get(s) : null)) });
  }
  return { sizes, series };
}

/** The highest median bandwidth in the sweep: {gbps, bytes, label}, or null. */
export function bestTransfer({ sizes, series }) {
  let best = null;
  for (const s of series) {
    s.median.forEach((v, i) => {
      if (v !== null && (best === null || v > best.gbps)) best = { gbps: v, bytes: sizes[i], label: s.label };
    });
  }
  return best;
}

/** GFLOP/s of a product of `flop` floating-point operations that took `ms`. */
export function gflops(flop, ms) {
  if (!(ms > 0) || !Number.isFinite(flop)) return null;
  return flop / (ms * 1e-3) / 1e9;
}

/** Matmul timing keys in display order. */
export const MATMUL_KINDS = [
  { key: 'cpu_ms', label: 'CPU (multithreaded SGEMM)', short: 'CPU', tone: 'warn', dash: false },
  { key: 'gpu_ms', label: 'GPU, data already on the GPU', short: 'GPU', tone: 'accent', dash: false },
  { key: 'gpu_with_copy_ms', label: 'GPU, copying both inputs in first', short: 'GPU with copy', tone: 'accent', dash: true },
];

/** The matmul rows as aligned series of median ms and GFLOP/s, per kind present. */
export function matmulSeries(rows) {
  const list = Array.isArray(rows) ? rows : [];
  const sizes = list.map((r) => r.size);
  const series = [];
  for (const kind of MATMUL_KINDS) {
    if (!list.some((r) => r[kind.key])) continue;
    const ms = list.map((r) => (r[kind.key] ? r[kind.key].median : null));
    const rate = list.map((r, i) => (ms[i] === null ? null : gflops(r.flop ?? 2 * r.size ** 3, ms[i])));
    series.push({ ...kind, ms, gflops: rate });
  }
  return { sizes, series };
}

/**
 * First size from which the GPU time (`key`) beats the CPU at that and every larger
 * size where both were measured; null when it never does. Mirrors the server's rule in
 * server/gpu/matmul.rs so the panel can mark it even if the field is absent.
 */
export function crossoverSize(rows, key) {
  let answer = null;
  for (let i = (rows || []).length - 1; i >= 0; i -= 1) {
    const row = rows[i];
    const gpu = row[key];
    const cpu = row.cpu_ms;
    if (!gpu || !cpu) continue;
    if (gpu.median < cpu.median) answer = row.size;
    else break;
  }
  return answer;
}

/** Latest end time (ms) over both timeline lanes, at least `floor`. */
export function timelineEnd(result, floor = 1) {
  const spans = [...(result.cpu_lane || []), ...(result.device_lane || [])];
  return spans.reduce((end, s) => Math.max(end, s.end_ms), floor);
}

/** The moment the CPU lane went quiet and how long the device kept working after it. */
export function hiddenWork(result) {
  const cpuEnd = (result.cpu_lane || []).reduce((end, s) => Math.max(end, s.end_ms), 0);
  const deviceEnd = (result.device_lane || []).reduce((end, s) => Math.max(end, s.end_ms), 0);
  return { cpuEnd, deviceEnd, afterMs: Math.max(0, deviceEnd - cpuEnd) };
}

/** The training run's logging cost: extra ms per step and as a fraction of the slower. */
export function loggingCost(result) {
  const every = Number(result.read_every_step_ms);
  const everyN = Number(result.read_every_n_ms);
  if (!Number.isFinite(every) || !Number.isFinite(everyN) || everyN <= 0) return null;
  return { extraMs: every - everyN, ratio: every / everyN };
}

/** ln 3: the loss of a three-way classifier that guesses evenly (lesson 6). */
export const CHANCE_LOSS = Math.log(3);
