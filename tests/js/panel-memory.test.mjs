// Unit tests for the memory bars (web/static/js/logic/panel-memory.js): the allocator
// playground's allocated / reserved / system bars, the snapshot bars, and the helpers
// that pick a free tensor name and an allocation that must run out of memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  segmentPercents, playgroundBars, oomProbeMib, nextTensorName, snapshotBars,
} from '../../web/static/js/logic/panel-memory.js';

const MIB = 1 << 20;

test('segments never overflow their track', () => {
  assert.deepEqual(segmentPercents([{ bytes: 25 }, { bytes: 50 }], 100), [25, 50]);
  assert.deepEqual(segmentPercents([{ bytes: 80 }, { bytes: 50 }], 100), [80, 20]);
  assert.deepEqual(segmentPercents([{ bytes: -5 }], 100), [0]);
  assert.deepEqual(segmentPercents([{ bytes: 5 }], 0), [0]);
});

test('freeing a tensor moves it from allocated to cached; reserved stays', () => {
  const view = {
    pool: { allocated_bytes: 10 * MIB, reserved_bytes: 30 * MIB, cap_bytes: 64 * MIB, tensors: { w: 10 * MIB }, cached_blocks: [20 * MIB] },
    system_used_bytes: 100 * MIB,
    system_view: "this server process's resident host memory",
  };
  const [allocated, reserved, system] = playgroundBars(view, 70 * MIB);
  assert.equal(allocated.total, 10 * MIB);
  assert.deepEqual(allocated.segments.map((x) => x.label), ['w']);
  assert.equal(reserved.total, 30 * MIB);
  assert.deepEqual(reserved.segments.map((x) => x.bytes), [10 * MIB, 20 * MIB]);
  assert.equal(system.delta, 30 * MIB);
  assert.equal(system.segments[0].bytes, 30 * MIB);
  assert.equal(system.scale, 64 * MIB);
  const noSystem = playgroundBars({ ...view, system_used_bytes: null });
  assert.equal(noSystem.length, 2);
  const shrunk = playgroundBars(view, 200 * MIB)[2];
  assert.equal(shrunk.segments[0].bytes, 0, 'a drop below the baseline draws nothing');
});

test('the OOM probe is past the cap and names do not collide', () => {
  const view = { pool: { cap_bytes: 64 * MIB } };
  assert.equal(oomProbeMib(view), 65);
  assert.equal(nextTensorName({}), 't1');
  assert.equal(nextTensorName({ t1: 1, t2: 2, t4: 4 }), 't3');
});

test('snapshot bars on the CPU backend show host RAM', () => {
  const bars = snapshotBars({
    backend: 'cpu', processes: [], host_total_bytes: 1000, host_available_bytes: 600, process_resident_bytes: 50,
  });
  assert.equal(bars.length, 1);
  assert.equal(bars[0].key, 'host');
  assert.deepEqual(bars[0].segments.map((x) => x.bytes), [50, 350]);
});

test('snapshot bars on a GPU split NVML usage by process', () => {
  const bars = snapshotBars({
    backend: 'cuda', driver_free_bytes: 700, driver_total_bytes: 1000, nvml_used_bytes: 320, nvml_total_bytes: 1000,
    processes: [{ pid: 7, used_bytes: 200 }, { pid: 9, used_bytes: null }],
    host_total_bytes: 10, host_available_bytes: 5, process_resident_bytes: 1,
  });
  assert.deepEqual(bars.map((b) => b.key), ['driver', 'nvml', 'host']);
  assert.equal(bars[0].total, 300);
  assert.deepEqual(bars[1].segments.map((x) => x.bytes), [200, 0, 120]);
});

test('each allocator action is explained from the pool before and after', async () => {
  const { describeChange } = await import('../../web/static/js/logic/panel-memory.js');
  const view = (allocated, reserved, tensors) => ({ pool: { allocated_bytes: allocated, reserved_bytes: reserved, cap_bytes: 64 * MIB, tensors, cached_blocks: [] } });
  const empty = view(0, 0, {});
  const one = view(16 * MIB, 16 * MIB, { a: 16 * MIB });
  assert.equal(describeChange('allocate', empty, one, 'a'), 'Allocated a (16 MiB): no free block fitted, so the allocator asked the driver for a new segment (or pages) and reserved is now 16 MiB.');
  const freed = view(0, 16 * MIB, {});
  assert.equal(describeChange('free', one, freed, 'a'), 'del a: allocated dropped to 0 B but reserved stayed at 16 MiB. The block stays in its segment, free for reuse: 16 MiB is now reserved but unallocated.');
  const reused = view(8 * MIB, 16 * MIB, { b: 16 * MIB });
  assert.match(describeChange('allocate', freed, reused, 'b'), /from a free block in an existing segment: reserved stayed at 16 MiB/);
  assert.match(describeChange('empty-cache', freed, empty, ''), /returned 16 MiB of entirely free segments/);
  assert.match(describeChange('empty-cache', one, one, ''), /nothing to release/);
  assert.match(describeChange('reset', one, empty, ''), /reset/);
});

test('a segment is drawn as its blocks, in proportion, and described in words', async () => {
  const { segmentBlocks, segmentSummary, unallocatedBytes } = await import('../../web/static/js/logic/panel-memory.js');
  const segment = {
    address: 1, total_size: 20 * MIB, segment_type: 'large', is_expandable: false,
    blocks: [
      { address: 1, size: 4 * MIB, state: 'allocated', tensor: 'w', requested_size: 4 * MIB },
      { address: 2, size: 16 * MIB, state: 'free', tensor: null, requested_size: 0 },
    ],
  };
  const { blocks, split } = segmentBlocks(segment);
  assert.equal(split, true);
  assert.deepEqual(blocks.map((b) => [b.label, b.pct, b.allocated]), [['w', 20, true], ['free', 80, false]]);
  assert.equal(segmentSummary(segment, 0), 'Segment 1 (large pool, 20 MiB): w 4 MiB, free 16 MiB');
  const whole = segmentBlocks({ ...segment, blocks: [segment.blocks[0]], total_size: 4 * MIB });
  assert.equal(whole.split, false);
  // A tensor has one colour in the segment view and in the allocated bar.
  const { tensorTones, playgroundBars } = await import('../../web/static/js/logic/panel-memory.js');
  const pool = { tensors: { a: MIB, w: 4 * MIB }, allocated_bytes: 5 * MIB, reserved_bytes: 22 * MIB, cap_bytes: 512 * MIB, cached_blocks: [] };
  const tones = tensorTones(pool);
  const allocatedBar = playgroundBars({ pool }, 0).find((b) => b.key === 'allocated');
  assert.equal(segmentBlocks(segment, tones).blocks[0].tone, allocatedBar.segments.find((s) => s.label === 'w').tone);
  assert.notEqual(tones.get('w'), tones.get('a'));
  assert.equal(unallocatedBytes({ pool: { reserved_bytes: 22 * MIB, allocated_bytes: 9 * MIB } }), 13 * MIB);
});
