// Memory numbers into stacked bars, for the memory-snapshot and allocator-playground
// panels (lesson 7). Each bar is {key, label, total, scale, segments:[{label, bytes,
// tone, pattern}]}; `segmentPercents` turns segments into widths that never overflow the
// track. Inputs are the server's JSON: /api/memory (server/gpu/memory.rs Snapshot) and
// /api/playground (PlaygroundView: pool {allocated_bytes, reserved_bytes, cap_bytes,
// tensors, cached_blocks}, system_used_bytes, system_view). Pure, tested in
// tests/js/panel-memory.test.mjs.

import { formatBytes } from './panel-format.js';

const MIB = 1024 * 1024;
const TENSOR_TONES = ['accent', 'note', 'warn', 'focus'];

/** Each live tensor's tone, by its place in `pool.tensors`: one colour per tensor in every bar. */
export function tensorTones(pool) {
  return new Map(Object.keys(pool.tensors || {}).map((name, i) => [name, TENSOR_TONES[i % TENSOR_TONES.length]]));
}

/** Widths in percent of `scale` for each segment, clamped so the sum stays ≤ 100. */
export function segmentPercents(segments, scale) {
  let left = 100;
  return segments.map((s) => {
    const raw = scale > 0 ? (Math.max(0, s.bytes) / scale) * 100 : 0;
    const pct = Math.min(left, raw);
    left -= pct;
    return pct;
  });
}

/** The three playground bars: allocated by tensor, reserved, and the system's view. */
export function playgroundBars(view, baselineSystemBytes) {
  const pool = view.pool;
  const scale = pool.cap_bytes;
  const tensors = Object.entries(pool.tensors || {});
  const tones = tensorTones(pool);
  const cached = (pool.cached_blocks || []).reduce((sum, b) => sum + b, 0);
  const bars = [
    {
      key: 'allocated',
      label: 'Allocated: live tensors (torch.cuda.memory_allocated)',
      total: pool.allocated_bytes,
      scale,
      segments: tensors.map(([name, bytes], i) => ({
        label: name,
        bytes,
        tone: tones.get(name),
        pattern: i >= TENSOR_TONES.length,
      })),
    },
    {
      key: 'reserved',
      label: 'Reserved: the caching pool (torch.cuda.memory_reserved)',
      total: pool.reserved_bytes,
      scale,
      segments: [
        { label: 'in live tensors', bytes: pool.allocated_bytes, tone: 'fg', pattern: false },
        { label: 'cached, free for reuse', bytes: cached, tone: 'fg', pattern: true },
      ],
    },
  ];
  if (Number.isFinite(view.system_used_bytes)) {
    const base = Number.isFinite(baselineSystemBytes) ? baselineSystemBytes : view.system_used_bytes;
    const delta = view.system_used_bytes - base;
    bars.push({
      key: 'system',
      label: `System view: ${view.system_view || 'memory in use'}`,
      total: view.system_used_bytes,
      delta,
      scale,
      segments: [{ label: 'added since you opened this page', bytes: Math.max(0, delta), tone: 'muted', pattern: false }],
    });
  }
  return bars;
}

/** MiB that cannot fit even after empty_cache: one more than the whole cap. */
export function oomProbeMib(view) {
  return Math.floor(view.pool.cap_bytes / MIB) + 1;
}

/** A tensor name not in use yet: t1, t2, … */
export function nextTensorName(tensors) {
  const taken = new Set(Object.keys(tensors || {}));
  for (let i = 1; ; i += 1) if (!taken.has(`t${i}`)) return `t${i}`;
}

/** Bars for a memory snapshot: the device's memory on CUDA, host RAM on the CPU backend. */
export function snapshotBars(snap) {
  const bars = [];
  if (snap.backend === 'cuda' && Number.isFinite(snap.driver_total_bytes)) {
    const used = snap.driver_total_bytes - snap.driver_free_bytes;
    bars.push({
      key: 'driver',
      label: 'Driver (cuMemGetInfo): used and free device memory',
      total: used,
      scale: snap.driver_total_bytes,
      segments: [
        { label: 'used', bytes: used, tone: 'accent', pattern: false },
      ],
    });
  }
  if (snap.backend === 'cuda' && Number.isFinite(snap.nvml_total_bytes)) {
    const procs = snap.processes || [];
    const known = procs.reduce((sum, p) => sum + (p.used_bytes || 0), 0);
    const used = snap.nvml_used_bytes ?? known;
    bars.push({
      key: 'nvml',
      label: 'NVML (what nvidia-smi shows): used memory by process',
      total: used,
      scale: snap.nvml_total_bytes,
      segments: [
        ...procs.map((p, i) => ({
          label: `PID ${p.pid}`,
          bytes: p.used_bytes || 0,
          tone: TENSOR_TONES[i % TENSOR_TONES.length],
          pattern: i >= TENSOR_TONES.length,
        })),
        { label: 'not attributed to a process (driver, reservations)', bytes: Math.max(0, used - known), tone: 'muted', pattern: true },
      ],
    });
  }
  if (Number.isFinite(snap.host_total_bytes)) {
    const available = snap.host_available_bytes ?? 0;
    const used = snap.host_total_bytes - available;
    const mine = Math.min(used, snap.process_resident_bytes ?? 0);
    bars.push({
      key: 'host',
      label: 'Host RAM (/proc/meminfo): this server and everything else',
      total: used,
      scale: snap.host_total_bytes,
      segments: [
        { label: 'this server process (resident)', bytes: mine, tone: 'accent', pattern: false },
        { label: 'other processes and the kernel', bytes: used - mine, tone: 'muted', pattern: true },
      ],
    });
  }
  return bars;
}

/**
 * One sentence on what an allocator action did, from the pool before and after:
 * `action` is 'allocate' | 'free' | 'empty-cache' | 'reset'.
 */
export function describeChange(action, before, after, name) {
  const b = before.pool;
  const a = after.pool;
  const reserved = `reserved ${a.reserved_bytes === b.reserved_bytes ? 'stayed at' : 'is now'} ${formatBytes(a.reserved_bytes)}`;
  switch (action) {
    case 'allocate': {
      const size = formatBytes(a.tensors[name] ?? a.allocated_bytes - b.allocated_bytes);
      const reused = a.reserved_bytes === b.reserved_bytes;
      return reused
        ? `Allocated ${name} (${size}) from a free block in an existing segment: ${reserved}, nothing new was asked of the driver.`
        : `Allocated ${name} (${size}): no free block fitted, so the allocator asked the driver for a new segment (or pages) and ${reserved}.`;
    }
    case 'free':
      return `del ${name}: allocated dropped to ${formatBytes(a.allocated_bytes)} but ${reserved}. The block stays in its segment, free for reuse: ${formatBytes(unallocatedBytes(after))} is now reserved but unallocated.`;
    case 'empty-cache': {
      const released = b.reserved_bytes - a.reserved_bytes;
      return released > 0
        ? `empty_cache() returned ${formatBytes(released)} of entirely free segments to the driver: ${reserved}; segments that hold a live tensor stay.`
        : 'empty_cache() had nothing to release: every segment holds a live tensor.';
    }
    case 'reset':
      return `The playground was reset: every tensor and segment is gone${a.conf && (a.conf.expandable_segments || a.conf.max_split_size_mb) ? ' and the new allocator options are in force' : ''}.`;
    default:
      return '';
  }
}

/**
 * One segment of the allocator playground (/api/playground pool.segments[i]) as the
 * blocks to draw inside its bar: each with its share of the segment in percent, a
 * label (the tensor's name, or "free") and whether it is allocated. `split` says the
 * segment holds more than one block, i.e. the allocator split it.
 */
export function segmentBlocks(segment, tones = new Map()) {
  const total = segment.total_size;
  const blocks = segment.blocks.map((b) => ({
    label: b.state === 'allocated' ? b.tensor : 'free',
    allocated: b.state === 'allocated',
    bytes: b.size,
    pct: total > 0 ? (b.size / total) * 100 : 0,
    tone: b.state === 'allocated' ? tones.get(b.tensor) || TENSOR_TONES[0] : 'free',
  }));
  return { blocks, split: blocks.length > 1 };
}

/** A segment in words: "Segment 1 (large pool, 20 MiB): w 4 MiB, free 16 MiB". */
export function segmentSummary(segment, index) {
  const kind = `${segment.segment_type} pool${segment.is_expandable ? ', expandable' : ''}`;
  const parts = segmentBlocks(segment).blocks.map((b) => `${b.label} ${formatBytes(b.bytes)}`);
  return `Segment ${index + 1} (${kind}, ${formatBytes(segment.total_size)}): ${parts.join(', ')}`;
}

/** Reserved but unallocated bytes: free space inside the segments (fragmentation). */
export function unallocatedBytes(view) {
  return Math.max(0, view.pool.reserved_bytes - view.pool.allocated_bytes);
}
