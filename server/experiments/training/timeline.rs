//! A training run's timeline as a Chrome trace. On the GPU: the host's track (each
//! step's launch calls, and each loss read, which waits for the GPU to finish the
//! step) and the stream's track (each step from the CUDA event before it to the one
//! after it, the very intervals `step_ms` summarises). On the CPU there is one track:
//! each step on the host clock, the same readings `step_ms` summarises.
//!
//! The two GPU tracks share an origin: the first mark is recorded on an idle stream
//! (right after a synchronise) and the host clock starts as that call returns, so they
//! agree to within one event record.

use std::time::Instant;

use crate::experiments::trace::{Trace, TraceBuilder, Track};

/// The trace being written.
pub(super) struct StepTrace {
    trace: TraceBuilder,
    origin: Instant,
    host: Track,
    stream: Option<Track>,
}

impl StepTrace {
    /// Starts the host clock now: on the GPU, call it right after the first mark.
    pub(super) fn new(on_gpu: bool) -> Self {
        let clock = if on_gpu {
            "host spans: the host's monotonic clock; steps on the stream: CUDA events between consecutive steps, aligned at the first event"
        } else {
            "the host's monotonic clock (Instant)"
        };
        let mut trace = TraceBuilder::new("training run", on_gpu, clock);
        let host = trace.track(if on_gpu {
            "CPU: launch calls and loss reads"
        } else {
            "CPU: training steps (forward, backward, optimizer)"
        });
        let stream = on_gpu.then(|| trace.track("GPU stream: training steps"));
        Self {
            trace,
            origin: Instant::now(),
            host,
            stream,
        }
    }

    /// Milliseconds since the trace began, on the host clock.
    pub(super) fn now_ms(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1e3
    }

    /// A span on the host's track.
    pub(super) fn host(&mut self, name: String, cat: &'static str, start_ms: f64, end_ms: f64) {
        self.trace.span(self.host, name, cat, start_ms, end_ms);
    }

    /// The steps on the stream's track from the marks' offsets (one before the first
    /// step, one after each).
    pub(super) fn stream_steps(&mut self, offsets: &[f64]) {
        let Some(track) = self.stream else { return };
        for (i, pair) in offsets.windows(2).enumerate() {
            let name = format!("step {}", i + 1);
            self.trace.span(track, name, "kernel", pair[0], pair[1]);
        }
    }

    /// The profiled step on a track of its own, starting at `start_ms`: each kernel for
    /// its measured time, named with its rate and how near its ceiling it ran.
    pub(super) fn profiled_step(&mut self, start_ms: f64, profile: &super::profile::KernelProfile) {
        let track = self
            .trace
            .track("GPU: one more step, kernel by kernel, against this GPU's ceilings");
        let mut at = start_ms;
        for k in &profile.kernels {
            let rate = if k.bound == "compute" {
                format!("{:.1} TFLOP/s", k.tflops)
            } else {
                format!("{:.0} GB/s", k.gbps)
            };
            let name = format!(
                "{}: {rate}, {:.0}% of the {} ceiling",
                k.name,
                100.0 * k.of_ceiling,
                k.bound
            );
            self.trace.span(track, name, "kernel", at, at + k.ms);
            at += k.ms;
        }
    }

    /// The finished trace.
    pub(super) fn finish(self) -> Trace {
        self.trace.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_steps_run_mark_to_mark_on_the_stream_beside_the_hosts_calls() {
        let mut t = StepTrace::new(true);
        t.host("step 1 launches".into(), "launch", 0.0, 0.1);
        t.host("read loss".into(), "sync", 0.1, 2.0);
        t.stream_steps(&[0.0, 1.5, 2.5]);
        let trace = t.finish();
        let steps: Vec<_> = trace
            .trace_events
            .iter()
            .filter(|e| e.ph == "X" && e.tid == 2)
            .collect();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1].name, "step 2");
        assert!(
            (steps[1].ts - 1500.0).abs() < 1e-9 && (steps[1].dur.unwrap() - 1000.0).abs() < 1e-9
        );
        let read = trace
            .trace_events
            .iter()
            .find(|e| e.name == "read loss")
            .unwrap();
        assert_eq!((read.tid, read.cat), (1, "sync"));
    }
}
