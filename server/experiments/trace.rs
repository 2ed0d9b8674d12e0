//! A run's timeline in the Chrome Trace Event format, the JSON that Perfetto
//! (ui.perfetto.dev), `chrome://tracing` and `torch.profiler`'s `export_chrome_trace`
//! share: one track (a "thread") per lane — the host's calls, each GPU stream or the
//! worker thread standing in for it — and one complete event (`"ph": "X"`, start `ts`
//! and `dur` in microseconds) per launch, kernel, copy or synchronisation.
//!
//! A trace travels inside an experiment's typed result (`output.trace`); the panel turns
//! it into a downloadable file and draws its lanes, so the engine and the job routes do
//! not change. Its size is bounded: past [`KEEP_PER_TRACK`] events on one track, the
//! rest are merged into at most [`AGGREGATES_PER_TRACK`] events, each named with how
//! many it stands for, and `otherData.aggregated` says so in the file itself.
//!
//! The format: Google, "Trace Event Format" (the JSON Object Format with
//! `traceEvents`, `displayTimeUnit` and `otherData`; `X` and `M` events).

use serde::Serialize;

/// Events kept one by one on each track before the rest are aggregated.
pub const KEEP_PER_TRACK: usize = 200;
/// Aggregated events at most, per track, for everything past [`KEEP_PER_TRACK`].
pub const AGGREGATES_PER_TRACK: usize = 50;

/// A whole trace, serialised exactly as a `.json` trace file.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Trace {
    /// Track names (`M` events) first, then every span (`X` events) in time order.
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TraceEvent>,
    /// How viewers show times: milliseconds.
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: &'static str,
    /// What made the trace, on which clock, and what was aggregated.
    #[serde(rename = "otherData")]
    pub other_data: TraceNote,
}

/// The trace's own description (`otherData`), shown by Perfetto as metadata.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TraceNote {
    /// `GPU Lab: NAME`.
    pub generator: String,
    /// `gpu` or `cpu`.
    pub backend: &'static str,
    /// Which clock the times come from.
    pub clock: String,
    /// Empty, or how many events were merged and on which tracks.
    pub aggregated: String,
}

/// One event: a track's name (`ph` = `M`) or a span (`ph` = `X`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TraceEvent {
    /// What a learner reads on the bar (`launch 3`, `kernel 3`, `synchronize`).
    pub name: String,
    /// `launch`, `kernel`, `graph`, `copy`, `sync`, `work` or `__metadata`.
    pub cat: &'static str,
    /// `X` (complete event) or `M` (metadata).
    pub ph: &'static str,
    /// Start, µs from the start of the run.
    pub ts: f64,
    /// Duration, µs (`X` events only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    /// Always 1: one run is one process.
    pub pid: u32,
    /// The track.
    pub tid: u32,
    /// A track's name (`M`), or how many spans an aggregated event stands for.
    pub args: TraceArgs,
}

/// An event's arguments.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct TraceArgs {
    /// The track's name (`thread_name` and `process_name` events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Spans this event stands for, when more than one (aggregated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// Time spent inside those spans, µs (an aggregated event's `dur` includes gaps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_us: Option<f64>,
}

/// A track handed out by [`TraceBuilder::track`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Track(u32);

#[derive(Debug, Clone)]
struct Span {
    track: Track,
    name: String,
    cat: &'static str,
    start_ms: f64,
    end_ms: f64,
}

/// Collects spans in milliseconds (the experiments' unit) and writes the trace.
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    generator: String,
    backend: &'static str,
    clock: String,
    tracks: Vec<String>,
    spans: Vec<Span>,
}

impl TraceBuilder {
    /// An empty trace of experiment `name` on `backend`, timed with `clock`.
    pub fn new(name: &str, on_gpu: bool, clock: impl Into<String>) -> Self {
        Self {
            generator: format!("GPU Lab: {name}"),
            backend: if on_gpu { "gpu" } else { "cpu" },
            clock: clock.into(),
            tracks: Vec::new(),
            spans: Vec::new(),
        }
    }

    /// Whether the trace is of a GPU run.
    pub fn on_gpu(&self) -> bool {
        self.backend == "gpu"
    }

    /// A new track (drawn in the order made).
    pub fn track(&mut self, name: impl Into<String>) -> Track {
        self.tracks.push(name.into());
        Track(self.tracks.len() as u32)
    }

    /// A span on `track` from `start_ms` to `end_ms` (ms from the start of the run).
    pub fn span(
        &mut self,
        track: Track,
        name: impl Into<String>,
        cat: &'static str,
        start_ms: f64,
        end_ms: f64,
    ) {
        self.spans.push(Span {
            track,
            name: name.into(),
            cat,
            start_ms,
            end_ms: end_ms.max(start_ms),
        });
    }

    /// The trace, with each track's spans past [`KEEP_PER_TRACK`] aggregated.
    pub fn finish(self) -> Trace {
        let meta = |name: &str, tid: u32, value: String| TraceEvent {
            name: name.to_string(),
            cat: "__metadata",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: 1,
            tid,
            args: TraceArgs {
                name: Some(value),
                ..TraceArgs::default()
            },
        };
        let mut events = vec![meta("process_name", 0, self.generator.clone())];
        let mut notes = Vec::new();
        for (i, name) in self.tracks.iter().enumerate() {
            let tid = i as u32 + 1;
            events.push(meta("thread_name", tid, name.clone()));
            let mut spans: Vec<&Span> = self.spans.iter().filter(|s| s.track.0 == tid).collect();
            spans.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
            let (kept, rest) = spans.split_at(spans.len().min(KEEP_PER_TRACK));
            events.extend(
                kept.iter()
                    .map(|s| event(tid, s.name.clone(), s.cat, s, s, 1, None)),
            );
            if !rest.is_empty() {
                let per = rest.len().div_ceil(AGGREGATES_PER_TRACK);
                for group in rest.chunks(per) {
                    let (first, last) = (group[0], group[group.len() - 1]);
                    let busy: f64 = group.iter().map(|s| (s.end_ms - s.start_ms) * 1e3).sum();
                    let name = format!("{} … {} ({} spans)", first.name, last.name, group.len());
                    events.push(event(
                        tid,
                        name,
                        first.cat,
                        first,
                        last,
                        group.len(),
                        Some(busy),
                    ));
                }
                notes.push(format!(
                    "{} spans on \"{name}\" after the first {KEEP_PER_TRACK} merged into groups of up to {per}",
                    rest.len()
                ));
            }
        }
        Trace {
            trace_events: events,
            display_time_unit: "ms",
            other_data: TraceNote {
                generator: self.generator,
                backend: self.backend,
                clock: self.clock,
                aggregated: notes.join("; "),
            },
        }
    }
}

fn event(
    tid: u32,
    name: String,
    cat: &'static str,
    first: &Span,
    last: &Span,
    count: usize,
    busy_us: Option<f64>,
) -> TraceEvent {
    let end = first.end_ms.max(last.end_ms);
    TraceEvent {
        name,
        cat,
        ph: "X",
        ts: first.start_ms * 1e3,
        dur: Some((end - first.start_ms) * 1e3),
        pid: 1,
        tid,
        args: TraceArgs {
            count: (count > 1).then_some(count),
            busy_us,
            ..TraceArgs::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(n: usize) -> Trace {
        let mut b = TraceBuilder::new("test", false, "host clock");
        let host = b.track("CPU: launch calls");
        let device = b.track("worker thread");
        for i in 0..n {
            let at = i as f64 * 0.01;
            b.span(host, format!("launch {i}"), "launch", at, at + 0.002);
            b.span(
                device,
                format!("kernel {i}"),
                "kernel",
                at + 0.003,
                at + 0.008,
            );
        }
        b.finish()
    }

    #[test]
    fn small_traces_keep_every_span_with_named_tracks_in_microseconds() {
        let t = spans(3);
        let json = serde_json::to_value(&t).unwrap();
        let events = json["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 3 + 6, "process, 2 thread names, 6 spans");
        assert_eq!(events[1]["args"]["name"], "CPU: launch calls");
        assert_eq!(events[1]["ph"], "M");
        let k1 = events.iter().find(|e| e["name"] == "kernel 1").unwrap();
        assert_eq!(k1["ph"], "X");
        assert_eq!(k1["tid"], 2);
        assert!((k1["ts"].as_f64().unwrap() - 13.0).abs() < 1e-9);
        assert!((k1["dur"].as_f64().unwrap() - 5.0).abs() < 1e-9);
        assert!(k1["args"].get("count").is_none());
        assert_eq!(json["otherData"]["aggregated"], "");
        assert_eq!(json["displayTimeUnit"], "ms");
    }

    #[test]
    fn a_thousand_launches_are_aggregated_past_the_cap_and_the_trace_says_so() {
        let t = spans(1000);
        let per_track = |tid: u32| {
            t.trace_events
                .iter()
                .filter(move |e| e.ph == "X" && e.tid == tid)
        };
        assert_eq!(per_track(1).count(), KEEP_PER_TRACK + AGGREGATES_PER_TRACK);
        let counted: usize = per_track(2).map(|e| e.args.count.unwrap_or(1)).sum();
        assert_eq!(counted, 1000, "every span is accounted for");
        let last = per_track(2).next_back().unwrap();
        assert_eq!(last.args.count, Some(16));
        assert!(
            last.name.contains("kernel 984 … kernel 999"),
            "{}",
            last.name
        );
        // 16 spans of 5 µs each inside a group that lasts 155 µs.
        assert!((last.args.busy_us.unwrap() - 80.0).abs() < 1e-6);
        assert!((last.dur.unwrap() - 155.0).abs() < 1e-6);
        assert!(
            t.other_data
                .aggregated
                .contains("800 spans on \"worker thread\"")
        );
        assert!(serde_json::to_string(&t).unwrap().len() < 100_000);
    }
}
