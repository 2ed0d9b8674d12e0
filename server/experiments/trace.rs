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
//! many it stands for, and `otherData.aggregated` says so in the file itself. A sweep's
//! repeated samples of one point ([`TraceBuilder::samples`]) keep their first
//! [`SAMPLES_KEPT`] runs and merge the rest into one event, so a default run of any
//! experiment stays well under 50 KB (results are stored with the job). Times are
//! written to the nanosecond (three decimals of a µs).
//!
//! The format: Google, "Trace Event Format" (the JSON Object Format with
//! `traceEvents`, `displayTimeUnit` and `otherData`; `X` and `M` events).

use serde::Serialize;

use crate::measure::recorded::Interval;

/// Events kept one by one on each track before the rest are aggregated.
pub const KEEP_PER_TRACK: usize = 100;
/// Aggregated events at most, per track, for everything past [`KEEP_PER_TRACK`].
pub const AGGREGATES_PER_TRACK: usize = 20;
/// Timed runs of one sweep point kept one by one; the rest become one event.
pub const SAMPLES_KEPT: usize = 5;

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
    /// `launch`, `kernel`, `graph`, `copy`, `sync`, `work`, `run` (a whole run holding
    /// its steps, as a lab draws them) or `__metadata`.
    pub cat: &'static str,
    /// `X` (complete event) or `M` (metadata).
    pub ph: &'static str,
    /// Start, µs from the start of the run.
    #[serde(serialize_with = "to_ns")]
    pub ts: f64,
    /// Duration, µs (`X` events only).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_to_ns")]
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
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_to_ns")]
    pub busy_us: Option<f64>,
}

/// `1 KiB`, `64 MiB`, `1.5 GiB`: sizes as span names show them.
pub fn bytes_label(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= 1 << 30 => (b as f64 / f64::from(1u32 << 30), "GiB"),
        b if b >= 1 << 20 => (b as f64 / f64::from(1u32 << 20), "MiB"),
        b if b >= 1 << 10 => (b as f64 / 1024.0, "KiB"),
        b => (b as f64, "B"),
    };
    let value = (value * 10.0).round() / 10.0;
    format!("{value} {unit}")
}

/// µs written to the nanosecond: shorter files, and no clock here is finer.
fn ns(us: f64) -> f64 {
    (us * 1e3).round() / 1e3
}

fn to_ns<S: serde::Serializer>(us: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(ns(*us))
}

fn opt_to_ns<S: serde::Serializer>(us: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match us {
        Some(us) => s.serialize_some(&ns(*us)),
        None => s.serialize_none(),
    }
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
    /// Spans this one stands for (1 unless merged: [`TraceBuilder::merged`]).
    count: usize,
    /// Time inside the merged spans, ms, when merged.
    busy_ms: Option<f64>,
}

impl Span {
    /// A span that stands for itself alone.
    fn one(track: Track, name: String, cat: &'static str, start_ms: f64, end_ms: f64) -> Self {
        Self {
            track,
            name,
            cat,
            start_ms,
            end_ms,
            count: 1,
            busy_ms: None,
        }
    }
}

/// Collects spans in milliseconds (the experiments' unit) and writes the trace.
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    generator: String,
    backend: &'static str,
    clock: String,
    tracks: Vec<String>,
    spans: Vec<Span>,
    merged_samples: usize,
    notes: Vec<String>,
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
            merged_samples: 0,
            notes: Vec::new(),
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
        let span = Span::one(track, name.into(), cat, start_ms, end_ms.max(start_ms));
        self.spans.push(span);
    }

    /// One sweep point's timed runs on `track`, each named `name` and spanning its
    /// measured duration from where it began: the first [`SAMPLES_KEPT`] as they are,
    /// the rest as one event (`count`, `busy_us`) named with how many it stands for.
    pub fn samples(&mut self, track: Track, name: &str, cat: &'static str, runs: &[Interval]) {
        let (kept, rest) = runs.split_at(runs.len().min(SAMPLES_KEPT));
        for run in kept {
            self.span(track, name, cat, run.start_ms, run.start_ms + run.ms);
        }
        if let (Some(first), Some(last)) = (rest.first(), rest.last()) {
            let span = (first.start_ms, last.start_ms + last.ms);
            let busy = rest.iter().map(|r| r.ms).sum();
            let merged = format!("{name} × {} more", rest.len());
            self.merged(track, merged, cat, span, rest.len(), busy);
            self.merged_samples += rest.len();
        }
    }

    /// One event on `track` standing for `count` spans the caller merged, which were
    /// busy for `busy_ms` in all between `start_ms` and `end_ms`; say how in [`Self::note`].
    pub fn merged(
        &mut self,
        track: Track,
        name: impl Into<String>,
        cat: &'static str,
        (start_ms, end_ms): (f64, f64),
        count: usize,
        busy_ms: f64,
    ) {
        let (name, end_ms) = (name.into(), end_ms.max(start_ms));
        self.spans.push(Span {
            busy_ms: Some(busy_ms),
            count,
            ..Span::one(track, name, cat, start_ms, end_ms)
        });
    }

    /// A sentence for `otherData.aggregated`: what the caller merged, and how.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
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
        let mut notes = self.notes.clone();
        if self.merged_samples > 0 {
            notes.push(format!(
                "{} timed runs past the first {SAMPLES_KEPT} of their point merged into one event per point",
                self.merged_samples
            ));
        }
        for (i, name) in self.tracks.iter().enumerate() {
            let tid = i as u32 + 1;
            events.push(meta("thread_name", tid, name.clone()));
            let mut spans: Vec<&Span> = self.spans.iter().filter(|s| s.track.0 == tid).collect();
            spans.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
            let (kept, rest) = spans.split_at(spans.len().min(KEEP_PER_TRACK));
            events.extend(kept.iter().map(|s| {
                let busy = s.busy_ms.map(|ms| ms * 1e3);
                event(tid, s.name.clone(), s.cat, s, s, s.count, busy)
            }));
            if !rest.is_empty() {
                let per = rest.len().div_ceil(AGGREGATES_PER_TRACK);
                for group in rest.chunks(per) {
                    let (first, last) = (group[0], group[group.len() - 1]);
                    let busy: f64 = group
                        .iter()
                        .map(|s| s.busy_ms.unwrap_or(s.end_ms - s.start_ms) * 1e3)
                        .sum();
                    let count: usize = group.iter().map(|s| s.count).sum();
                    let name = format!("{} … {} ({count} spans)", first.name, last.name);
                    events.push(event(tid, name, first.cat, first, last, count, Some(busy)));
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
            count: (count > 1 || busy_us.is_some()).then_some(count),
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
        assert_eq!(last.args.count, Some(45));
        assert!(
            last.name.contains("kernel 955 … kernel 999"),
            "{}",
            last.name
        );
        // 45 spans of 5 µs each inside a group that lasts 445 µs.
        assert!((last.args.busy_us.unwrap() - 225.0).abs() < 1e-6);
        assert!((last.dur.unwrap() - 445.0).abs() < 1e-6);
        assert!(
            t.other_data
                .aggregated
                .contains("900 spans on \"worker thread\"")
        );
        assert!(serde_json::to_string(&t).unwrap().len() < 50_000);
    }

    #[test]
    fn a_points_runs_past_the_first_few_become_one_event_that_counts_them() {
        let mut b = TraceBuilder::new("test", true, "CUDA events");
        let stream = b.track("GPU stream");
        let runs: Vec<Interval> = (0..9)
            .map(|i| Interval {
                start_ms: f64::from(2 * i),
                ms: 0.5 + f64::from(i) * 0.1,
            })
            .collect();
        b.samples(stream, "SGEMM 64", "kernel", &runs);
        b.samples(stream, "SGEMM 128", "kernel", &runs[..2]);
        let t = b.finish();
        let spans: Vec<&TraceEvent> = t.trace_events.iter().filter(|e| e.ph == "X").collect();
        assert_eq!(spans.len(), SAMPLES_KEPT + 1 + 2);
        let first: Vec<_> = spans.iter().filter(|e| e.name == "SGEMM 64").collect();
        assert_eq!(first.len(), SAMPLES_KEPT);
        assert!(
            (first[1].dur.unwrap() - 600.0).abs() < 1e-6,
            "run 1 lasts 0.6 ms"
        );
        let merged = spans.iter().find(|e| e.args.count.is_some()).unwrap();
        assert_eq!(merged.name, "SGEMM 64 × 4 more");
        assert_eq!(merged.args.count, Some(4));
        // Runs 5..8 last 1.0 + 1.1 + 1.2 + 1.3 ms; the event spans 10.0 → 17.3 ms.
        assert!((merged.args.busy_us.unwrap() - 4600.0).abs() < 1e-6);
        assert!((merged.dur.unwrap() - 7300.0).abs() < 1e-6);
        assert!(t.other_data.aggregated.contains("4 timed runs"));
        let json = serde_json::to_string(&t).unwrap();
        assert!(json.contains("\"dur\":600.0"), "written to the ns: {json}");
    }
}
