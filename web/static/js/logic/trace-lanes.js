// Reads a Chrome Trace Event file (the `trace` an experiment's result carries: the JSON
// Object Format with traceEvents, as server/experiments/trace.rs writes it) into lanes
// for the panel's timeline: one lane per track named by its thread_name event, each with
// its complete ("X") events in ms from the start of the run. Pure functions, no DOM, so
// tests/js/trace-lanes.test.mjs runs them under node.

/** [{ tid, name, spans: [{ name, cat, startMs, durMs, count }] }] in track order. */
export function traceLanes(trace) {
  const events = (trace && Array.isArray(trace.traceEvents)) ? trace.traceEvents : [];
  const lanes = new Map();
  for (const e of events) {
    if (e.ph === 'M' && e.name === 'thread_name') {
      lanes.set(e.tid, { tid: e.tid, name: (e.args && e.args.name) || `track ${e.tid}`, spans: [] });
    }
  }
  for (const e of events) {
    if (e.ph !== 'X') continue;
    if (!lanes.has(e.tid)) lanes.set(e.tid, { tid: e.tid, name: `track ${e.tid}`, spans: [] });
    lanes.get(e.tid).spans.push({
      name: e.name,
      cat: e.cat,
      startMs: e.ts / 1e3,
      durMs: (e.dur || 0) / 1e3,
      count: (e.args && e.args.count) || 1,
    });
  }
  const out = [...lanes.values()];
  out.forEach((lane) => lane.spans.sort((a, b) => a.startMs - b.startMs));
  return out;
}

/** The end of the last span, ms (0 for an empty trace). */
export function traceEnd(lanes) {
  return lanes.reduce((end, lane) => lane.spans.reduce((e, s) => Math.max(e, s.startMs + s.durMs), end), 0);
}

/** How many spans the trace stands for (aggregated events count each span they merge). */
export function spanCount(lanes) {
  return lanes.reduce((n, lane) => n + lane.spans.reduce((m, s) => m + s.count, 0), 0);
}

/** `gpulab-NAME-trace.json`: the downloaded file's name (letters, digits and dashes). */
export function traceFileName(experiment) {
  const safe = String(experiment || 'run').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'run';
  return `gpulab-${safe}-trace.json`;
}
