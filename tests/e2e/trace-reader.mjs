// Every experiment trace read by a trace reader nobody here wrote: Chrome DevTools' own
// trace engine (the npm package @paulirish/trace_engine, pinned in package.json). For
// each experiment whose result carries a trace, `gpulab bench NAME --json` runs it on
// this machine's backend; the engine parses the trace's events, and the test checks
// that it found every named track with every span on it, and that the spans' durations
// agree with the figures the result reports beside the trace.
//
//   GPULAB_BIN=target/debug/gpulab node tests/e2e/trace-reader.mjs
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import * as Trace from '@paulirish/trace_engine/models/trace/trace.js';

// The engine's insights use DOMRect, which node lacks (the package's own CLI does this).
globalThis.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) { Object.assign(this, { x, y, width, height }); }
};

const BIN = process.env.GPULAB_BIN || 'target/debug/gpulab';

function bench(name, args = []) {
  const out = execFileSync(BIN, ['bench', name, '--json', ...args], { encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(out);
}

/** The engine's threads as [{ name, entries: [{ name, ts, dur }] }] (µs). */
async function parse(trace) {
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(trace.traceEvents);
  const parsed = model.parsedTrace();
  assert.ok(parsed, 'the engine made a parsed trace');
  const threads = [];
  for (const process of parsed.data.Renderer.processes.values()) {
    for (const thread of process.threads.values()) {
      threads.push({ name: thread.name, entries: thread.entries.map((e) => ({ name: e.name, ts: e.ts, dur: e.dur ?? 0, count: (e.args && e.args.count) || 1, busy: e.args && e.args.busy_us })) });
    }
  }
  return threads;
}

/** What the file itself declares: its track names and its X events per track. */
function declared(trace) {
  const names = new Map(trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => [e.tid, e.args.name]));
  return [...names].map(([tid, name]) => ({ name, spans: trace.traceEvents.filter((e) => e.ph === 'X' && e.tid === tid) }));
}

function sameTracks(threads, trace) {
  for (const track of declared(trace)) {
    const thread = threads.find((t) => t.name === track.name);
    assert.ok(thread, `the engine found track "${track.name}" (it found ${threads.map((t) => t.name)})`);
    assert.equal(thread.entries.length, track.spans.length, `every span on "${track.name}"`);
  }
}

/** The thread the engine found for the declared track whose name starts with `prefix`. */
function thread(threads, trace, prefix) {
  const track = declared(trace).find((t) => t.name.startsWith(prefix));
  assert.ok(track, `a track "${prefix}…" (tracks: ${declared(trace).map((t) => t.name)})`);
  return threads.find((t) => t.name === track.name);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * One sweep point's timed runs as the engine read them: the kept ones named `name`,
 * the rest merged into one `name × k more`. Checks that they count exactly the
 * summary's samples, that every kept run (in ms, via `toValue`) lies within the
 * summary's range, and that when every run was kept their median is the summary's.
 */
function pointMatches(entries, name, summary, toValue = (ms) => ms) {
  const kept = entries.filter((e) => e.name === name);
  const merged = entries.filter((e) => e.name.startsWith(`${name} × `));
  const counted = kept.length + merged.reduce((n, e) => n + e.count, 0);
  assert.equal(counted, summary.samples, `${name}: every timed run is on the trace`);
  assert.ok(kept.length > 0, `${name}: runs kept one by one`);
  const values = kept.map((e) => toValue(e.dur / 1e3));
  const [lo, hi] = [Math.min(summary.min, summary.max), Math.max(summary.min, summary.max)];
  for (const v of values) assert.ok(v >= lo * (1 - 1e-6) - 1e-6 && v <= hi * (1 + 1e-6) + 1e-6, `${name}: ${v} within [${lo}, ${hi}]`);
  if (!merged.length) {
    const m = median(values);
    assert.ok(Math.abs(m - summary.median) <= 1e-6 * Math.abs(summary.median) + 1e-6, `${name}: median ${m} is the result's ${summary.median}`);
  }
  return { kept, merged };
}

const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-3 + 1e-6 * Math.abs(b), `${what}: ${a} vs ${b}`);

test('the timing trap trace: launches, the wait and every kernel, as the result reports them', async () => {
  const r = bench('timing');
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const [host, device] = declared(r.trace).map((t) => threads.find((x) => x.name === t.name));
  const kernels = device.entries;
  assert.equal(kernels.length, r.device_lane.length);
  kernels.forEach((k, i) => {
    close(k.dur / 1e3, r.device_lane[i].end_ms - r.device_lane[i].start_ms, `kernel ${i} duration`);
  });
  const sync = host.entries.find((e) => e.name === 'synchronize');
  close((sync.ts + sync.dur) / 1e3, r.host_sync_ms, 'the wait ends when the synchronised timer stops');
  close(sync.ts / 1e3, r.host_no_sync_ms, 'the wait starts when the unsynchronised timer stops');
});

test('the launch trace: each way\'s traced chain lasts the wall time the result reports', async () => {
  const r = bench('launch', ['--max-kernels', '10', '--elements', '256']);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const host = threads.find((t) => t.name.startsWith('CPU'));
  for (const point of r.points) {
    for (const way of point.ways) {
      const sync = host.entries.find((e) => e.name === `synchronize (${point.kernels} × ${way.way})`);
      assert.ok(sync, `a wait for ${point.kernels} × ${way.way}`);
      // The calls of this chain are the `calls` entries just before its wait.
      const at = host.entries.indexOf(sync);
      const first = host.entries[at - way.calls];
      close((sync.ts + sync.dur - first.ts), way.traced_wall_us, `${point.kernels} × ${way.way} wall time`);
      assert.ok(way.traced_wall_us >= way.wall_us.min - 1e-6 && way.traced_wall_us <= way.wall_us.max + 1e-6, 'the traced run is one of the timed ones');
    }
  }
});

test('a thousand-step launch trace stays small, says it aggregated, and still parses', async () => {
  const r = bench('launch', ['--max-kernels', '1000', '--elements', '16']);
  assert.ok(JSON.stringify(r.trace).length < 50_000, 'bounded size');
  assert.match(r.trace.otherData.aggregated, /merged/);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
});

test('the matmul trace: every timed product per size, as the medians report them', async () => {
  const r = bench('matmul', ['--max-size', '128']);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const cpu = thread(threads, r.trace, 'CPU: SGEMM');
  let exact = 0;
  for (const row of r.rows) {
    const { merged } = pointMatches(cpu.entries, `SGEMM ${row.size}×${row.size}`, row.cpu_ms);
    exact += merged.length ? 0 : 1;
    if (row.gpu_ms) {
      const gpu = thread(threads, r.trace, 'GPU stream');
      pointMatches(gpu.entries, `SGEMM ${row.size}×${row.size}`, row.gpu_ms);
      pointMatches(gpu.entries, `copy A, B in + SGEMM ${row.size}×${row.size}`, row.gpu_with_copy_ms);
    }
  }
  assert.ok(exact > 0 || r.rows.every((row) => row.cpu_ms.samples > 5), 'some point is checked median to median');
});

test('the transfer trace: each size and way, its samples giving the GB/s the result reports', async () => {
  const r = bench('transfer', ['--max-bytes', String(1 << 20)]);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const lane = r.trace.otherData.backend === 'gpu' ? thread(threads, r.trace, 'GPU stream') : thread(threads, r.trace, 'CPU: memcpy');
  const ways = { h2d: 'H→D', d2h: 'D→H' };
  const label = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);
  for (const p of r.points) {
    const name = p.direction === 'h2h' ? `memcpy ${label(p.bytes)} × ${p.copies}` : `${ways[p.direction]} ${p.memory} ${label(p.bytes)} × ${p.copies}`;
    // Bandwidth = bytes × copies / time: the slowest sample is the smallest GB/s.
    pointMatches(lane.entries, name, p.gbps, (ms) => (p.bytes * p.copies) / 1e9 / (ms / 1e3));
  }
});

test('the streams trace: one track per stream, three steps per chunk, the result\'s timeline', async () => {
  const r = bench('streams', ['--chunks', '4', '--chunk-mib', '1', '--streams', '2']);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const lanes = declared(r.trace);
  assert.equal(lanes.length, new Set(r.timeline.map((s) => s.lane)).size, 'a track per stream used');
  assert.equal(lanes.reduce((n, l) => n + l.spans.length, 0), 3 * r.chunks, 'copy in, compute, copy out per chunk');
  for (const step of r.timeline) {
    const t = threads.find((x) => x.name === lanes[step.lane].name);
    const e = t.entries.find((x) => x.name === `${step.step} (chunk ${step.chunk})`);
    assert.ok(e, `${step.step} of chunk ${step.chunk} on lane ${step.lane}`);
    close(e.ts / 1e3, step.start_ms, `${step.step} ${step.chunk} start`);
    close(e.dur / 1e3, step.end_ms - step.start_ms, `${step.step} ${step.chunk} duration`);
  }
});

test('the training trace: every step, their median the step time the result reports', async () => {
  const r = bench('training', ['--steps', '40', '--log-every', '10']);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const gpu = r.trace.otherData.backend === 'gpu';
  const steps = (gpu ? thread(threads, r.trace, 'GPU stream') : thread(threads, r.trace, 'CPU: training steps')).entries;
  assert.equal(steps.length, r.step_ms.samples, 'one span per step');
  const m = median(steps.map((e) => e.dur / 1e3));
  assert.ok(Math.abs(m - r.step_ms.median) <= 1e-6 + 1e-6 * r.step_ms.median, `median step ${m} vs ${r.step_ms.median}`);
  if (gpu) {
    const reads = thread(threads, r.trace, 'CPU').entries.filter((e) => e.name.startsWith('read loss'));
    assert.equal(reads.length, r.loss_curve.length, 'a loss read per logged point');
  }
});

test('the precision trace: each format\'s timed products, as the medians report them', async () => {
  const r = bench('precision', ['--size', '128']);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  const [lane] = declared(r.trace).map((t) => threads.find((x) => x.name === t.name));
  for (const row of r.rows) pointMatches(lane.entries, `GEMM ${row.precision.toUpperCase()} ${r.size}×${r.size}`, row.ms);
});

test('the lab trace: a track per setting, each sample its runs, each run its wall time and its steps inside it', async () => {
  const r = bench('lab', ['--lab', 'stop-waiting', '--log-every', '20']);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
  assert.deepEqual(declared(r.trace).map((t) => t.name), ['baseline', 'your settings', 'reference']);
  for (const [prefix, measured] of [['baseline', r.baseline], ['your settings', r.candidate], ['reference', r.reference]]) {
    const entries = thread(threads, r.trace, prefix).entries;
    const within = (outer) => entries.filter((e) => e !== outer && e.ts >= outer.ts && e.ts + e.dur <= outer.ts + outer.dur + 1e-6);
    const samples = entries.filter((e) => /^(warm-up|round \d+)$/.test(e.name));
    assert.deepEqual(samples.map((e) => e.name), ['warm-up', ...measured.samples.map((_, i) => `round ${i + 1}`)], `${prefix}: the warm-up, then every graded round`);
    samples.forEach((sample, i) => {
      const inside = within(sample);
      const [run] = inside.filter((e) => e.name === 'run 1');
      assert.ok(run, `${prefix} ${sample.name}: its first run`);
      const others = inside.filter((e) => /^runs? 2/.test(e.name));
      assert.ok(others.length <= 1, `${prefix} ${sample.name}: the other runs are one event`);
      const runs = 1 + others.reduce((n, e) => n + e.count, 0);
      assert.ok(i > 0 || runs === 1, 'a warm-up is one run');
      // A round's samples/s is batch × steps × runs ÷ the runs' wall times added up.
      const walls = run.dur / 1e3 + others.reduce((ms, e) => ms + e.busy / 1e3, 0);
      if (i > 0) close(walls, (measured.knobs.batch * r.steps * runs) / measured.samples[i - 1] * 1e3, `${prefix} ${sample.name} wall time of ${runs} runs`);
      const steps = within(run).filter((e) => /^steps? \d/.test(e.name)).reduce((n, e) => n + e.count, 0);
      assert.equal(steps, r.steps, `${prefix} ${sample.name}: every step inside its first run`);
      assert.equal(within(run).filter((e) => e.name.startsWith('final loss read')).length, 1, `${prefix} ${sample.name}: its final wait`);
    });
  }
  assert.match(r.trace.otherData.aggregated, /merged into one event per run/);
});

test('every default run\'s trace stays well under 50 KB', async () => {
  for (const [name, args] of [['training', []], ['streams', []], ['launch', []], ['transfer', []], ['precision', ['--size', '512']], ['lab', []]]) {
    const r = bench(name, args);
    const bytes = JSON.stringify(r.trace).length;
    assert.ok(bytes < 50_000, `${name}: ${bytes} bytes of trace`);
  }
});
