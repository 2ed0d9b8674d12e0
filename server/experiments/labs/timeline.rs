//! A lab job's timeline as a Chrome trace ([`crate::experiments::trace`]): one track
//! per setting (the baseline, your settings, the lab's reference), so the interleaving
//! A B R A B R … shows as bursts taking turns across the three tracks. On each track,
//! every sample is one event (`warm-up`, then `round 1` …) holding its back-to-back
//! runs (a short run is repeated to make a sample: [`super::MIN_SAMPLE`]): the first,
//! `run 1`, spans its wall time, the very interval its samples/s comes from, with the
//! loop's steps inside on the host clock (the first [`STEPS_KEPT`] one by one, the rest
//! merged into one event that says how many it stands for, then the final loss read,
//! which waits for the last step); the other runs are one merged event with their count
//! and their wall times added up.
//!
//! Host clock only, on both backends: a step's span is the loop's own time for it
//! (staging and copying its batch, enqueueing it, any loss read). A loop that only
//! enqueues shows short steps and a long final wait; one that reads the loss every
//! step shows each step waiting for the device — the gap the stop-waiting lab is about.

use std::time::Instant;

use super::sample::RunSample;
use crate::experiments::trace::{Trace, TraceBuilder, Track};

/// Steps of each run kept one by one; the rest of the run become one event.
pub const STEPS_KEPT: usize = 5;

/// The tracks' names, in the order the settings run.
pub const TRACKS: [&str; 3] = ["baseline", "your settings", "reference"];

/// The trace being written, on one host clock shared by every run of the job.
pub struct LabTrace {
    trace: TraceBuilder,
    origin: Instant,
    tracks: [Track; 3],
}

impl LabTrace {
    /// Starts the job's clock now, before the first run.
    pub fn new(on_gpu: bool) -> Self {
        let mut trace = TraceBuilder::new(
            "tuning lab",
            on_gpu,
            "the host's monotonic clock (Instant): runs from their first enqueue to their final loss read, steps as the loop's host time for each",
        );
        let tracks = TRACKS.map(|name| trace.track(name));
        trace.note(format!(
            "each run's steps past the first {STEPS_KEPT} merged into one event per run"
        ));
        Self {
            trace,
            origin: Instant::now(),
            tracks,
        }
    }

    /// Sample `name` (`warm-up`, `round 3`) of setting `setting` (0 = baseline, 1 =
    /// yours, 2 = reference): its back-to-back `runs`. The sample is one event from the
    /// first run's start to the last run's end; inside it, the first run with its steps
    /// and, when there were more, the others merged into one event that says how many
    /// and their wall time added up (what the sample's samples/s is computed from).
    pub fn sample(&mut self, setting: usize, name: &str, runs: &[RunSample]) {
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
            return;
        };
        let track = self.tracks[setting.min(2)];
        let origin = self.origin;
        let at = |r: &RunSample| r.clock.started.duration_since(origin).as_secs_f64() * 1e3;
        let wall = |r: &RunSample| {
            let last_end = r.clock.steps.last().map_or(0.0, |s| s.1);
            r.clock.wall_ms.max(last_end)
        };
        self.trace
            .span(track, name, "sample", at(first), at(last) + wall(last));
        self.run(track, at(first), &first.clock);
        if let Some(second) = runs.get(1) {
            let busy = runs[1..].iter().map(wall).sum();
            let merged = match runs.len() {
                2 => "run 2".to_string(),
                n => format!("runs 2–{n}"),
            };
            let span = (at(second), at(last) + wall(last));
            self.trace
                .merged(track, merged, "run", span, runs.len() - 1, busy);
        }
    }

    /// One run at `at` ms on the job's clock: its wall time, its steps, its final wait.
    fn run(&mut self, track: Track, at: f64, clock: &super::sample::RunClock) {
        let last_end = clock.steps.last().map_or(0.0, |s| s.1);
        let wall = clock.wall_ms.max(last_end);
        self.trace.span(track, "run 1", "run", at, at + wall);
        let (kept, rest) = clock.steps.split_at(clock.steps.len().min(STEPS_KEPT));
        for (i, (start, end)) in kept.iter().enumerate() {
            let step = format!("step {}", i + 1);
            self.trace.span(track, step, "work", at + start, at + end);
        }
        if let (Some(first), Some(last)) = (rest.first(), rest.last()) {
            let busy = rest.iter().map(|(s, e)| e - s).sum();
            let name = format!("steps {}–{}", STEPS_KEPT + 1, clock.steps.len());
            let span = (at + first.0, at + last.1);
            self.trace
                .merged(track, name, "work", span, rest.len(), busy);
        }
        let wait = "final loss read (waits for the last step)";
        self.trace
            .span(track, wait, "sync", at + last_end, at + wall);
    }

    /// The finished trace.
    pub fn finish(self) -> Trace {
        self.trace.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::labs::sample::{RunClock, TimeProfile};

    fn sample(steps: usize) -> RunSample {
        let mut clock = RunClock::start(steps);
        clock.steps = (0..steps).map(|i| (i as f64, i as f64 + 0.5)).collect();
        clock.wall_ms = steps as f64 + 2.0;
        RunSample {
            samples_per_sec: 1.0,
            timer_ratio: 1.0,
            first_loss: 1.0,
            final_loss: 0.5,
            profile: TimeProfile::default(),
            clock,
        }
    }

    #[test]
    fn a_run_is_an_event_holding_its_steps_the_rest_merged_and_the_final_wait() {
        let mut t = LabTrace::new(false);
        // Three back-to-back runs of 10 ms each.
        let runs: Vec<RunSample> = (0..3u64)
            .map(|i| {
                let mut run = sample(8);
                run.clock.started += std::time::Duration::from_millis(10 * i);
                run
            })
            .collect();
        t.sample(1, "round 1", &runs);
        let trace = t.finish();
        let events: Vec<_> = trace.trace_events.iter().filter(|e| e.ph == "X").collect();
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "round 1",
                "run 1",
                "step 1",
                "step 2",
                "step 3",
                "step 4",
                "step 5",
                "steps 6–8",
                "final loss read (waits for the last step)",
                "runs 2–3"
            ]
        );
        assert!(events.iter().all(|e| e.tid == 2), "on \"your settings\"");
        let (sample, run, merged, wait, others) =
            (events[0], events[1], events[7], events[8], events[9]);
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-6;
        assert!(close(run.dur, 10_000.0), "the run's wall time, µs");
        assert_eq!(merged.args.count, Some(3));
        assert!(close(merged.args.busy_us, 1_500.0));
        assert!(close(merged.dur, 2_500.0) && close(wait.dur, 2_500.0));
        // The other two runs: one event with their count and their walls added up.
        assert_eq!(others.args.count, Some(2));
        assert!(close(others.args.busy_us, 20_000.0));
        let end = |e: &crate::experiments::trace::TraceEvent| e.ts + e.dur.unwrap();
        assert!(
            events[2..9]
                .iter()
                .all(|e| e.ts >= run.ts && end(e) <= end(run) + 1e-6),
            "every step nests inside its run"
        );
        assert!(
            events[1..]
                .iter()
                .all(|e| e.ts >= sample.ts && end(e) <= end(sample) + 1e-6),
            "every run nests inside its sample"
        );
        assert!(trace.other_data.aggregated.contains("past the first 5"));
    }
}
