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
      threads.push({ name: thread.name, entries: thread.entries.map((e) => ({ name: e.name, ts: e.ts, dur: e.dur ?? 0 })) });
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
  assert.ok(JSON.stringify(r.trace).length < 200_000, 'bounded size');
  assert.match(r.trace.otherData.aggregated, /merged/);
  const threads = await parse(r.trace);
  sameTracks(threads, r.trace);
});
