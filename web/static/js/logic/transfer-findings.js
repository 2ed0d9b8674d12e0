// The sentences under the transfer benchmark's chart, computed from that chart's data on
// the backend that measured it: a caption may only say what the plotted curve shows.
// On a GPU, small copies are slow (the fixed cost of starting a copy) — but only when the
// smallest size actually measured below the best; on the CPU's memcpy the smallest copies
// are often the fastest (they stay in cache), and the text says whichever happened.
// No DOM here, so node's test runner checks each case.

import { bestTransfer } from './panel-series.js';
import { formatBytes, formatGbps, formatPercent, formatTimes } from './panel-format.js';

/** Below this share of the best bandwidth, a size counts as clearly slower. */
const CLEARLY_SLOWER = 0.5;

function at(series, key, index) {
  const s = series.find((x) => x.key === key);
  return s ? s.median[index] : null;
}

/** Where the curve of `s` (one series) peaks and what its ends measured. */
function shape(sizes, s) {
  let top = 0;
  s.median.forEach((v, i) => {
    if (v !== null && (s.median[top] === null || v > s.median[top])) top = i;
  });
  return { topIndex: top, top: s.median[top], first: s.median[0], last: s.median[sizes.length - 1] };
}

/**
 * The findings for `data` ({sizes, series} from transferSeries), the link's theoretical
 * `peak` in GB/s (or null) and the `deviceName`: an array of {text, tone}.
 */
export function transferFindings(data, peak, deviceName) {
  const { sizes, series } = data;
  const out = [];
  if (sizes.length === 0 || series.length === 0) return out;
  const last = sizes.length - 1;
  const best = bestTransfer(data);
  const hostOnly = series.length === 1 && series[0].direction === 'h2h';
  if (hostOnly) {
    const { topIndex, top, first, last: end } = shape(sizes, series[0]);
    let curve;
    if (topIndex === 0) {
      curve = `the smallest copy (${formatBytes(sizes[0])}) was the fastest at ${formatGbps(first)}, and the largest (${formatBytes(sizes[last])}) reached ${formatGbps(end)}: small buffers stay in the CPU's caches, large ones go to main memory`;
    } else if (topIndex === last) {
      curve = `bandwidth rose with size, from ${formatGbps(first)} at ${formatBytes(sizes[0])} to ${formatGbps(end)} at ${formatBytes(sizes[last])}: at small sizes the fixed cost of each copy call weighs most`;
    } else {
      curve = `bandwidth peaked at ${formatGbps(top)} for ${formatBytes(sizes[topIndex])}, between ${formatGbps(first)} at ${formatBytes(sizes[0])} and ${formatGbps(end)} at ${formatBytes(sizes[last])}: mid-sized buffers fit in the CPU's caches`;
    }
    out.push({
      text: `No GPU, so there is no PCIe bus to measure: this is memcpy between two buffers in host memory on ${deviceName || 'the server'}. Here ${curve}. A GPU link behaves differently; this is not its speed.`,
      tone: 'warn',
    });
    return out;
  }
  if (best && peak) {
    out.push({ text: `Fastest: ${best.label} at ${formatBytes(best.bytes)}, ${formatGbps(best.gbps)}, ${formatPercent(best.gbps / peak)} of the link's theoretical ${formatGbps(peak)}.` });
  }
  const pinned = at(series, 'h2d-pinned', last);
  const pageable = at(series, 'h2d-pageable', last);
  if (pinned && pageable) {
    out.push({ text: `At ${formatBytes(sizes[last])}, host→device from pinned memory ran at ${formatGbps(pinned)} and from pageable memory at ${formatGbps(pageable)}: pinned is ${formatTimes(pinned / pageable)} as fast.` });
  }
  if (best && sizes.length > 1) {
    const small = series.find((s) => s.label === best.label).median[0];
    if (small !== null && small < best.gbps * CLEARLY_SLOWER) {
      out.push({ text: `The smallest copy (${formatBytes(sizes[0])}) reached only ${formatGbps(small)} in the fastest series: at that size the fixed cost of starting a copy outweighs moving the bytes.` });
    } else if (small !== null) {
      out.push({ text: `Even the smallest copy (${formatBytes(sizes[0])}) reached ${formatGbps(small)}, ${formatPercent(small / best.gbps)} of the best: on this machine the fixed cost of a copy is small next to moving ${formatBytes(sizes[0])}.` });
    }
  }
  return out;
}
