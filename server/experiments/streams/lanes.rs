//! The streams result's timeline as a Chrome trace: one track per stream (or, on the
//! CPU, per worker thread standing in for one), each chunk's copy in, compute and copy
//! out on its stream's track, named as the panel names them. The spans are the
//! timeline's own (CUDA events around each step on the GPU, the host clock on the CPU),
//! so the trace shows exactly the run the result draws: the fastest multi-stream one.

use super::StepSpan;
use crate::experiments::trace::{Trace, TraceBuilder};

/// The timeline's steps, one track per lane.
pub(super) fn trace_of(timeline: &[StepSpan], on_gpu: bool) -> Trace {
    let clock = if on_gpu {
        "CUDA events recorded on each stream around every step, offsets from the run's first event"
    } else {
        "the host's monotonic clock (Instant), read by each worker thread"
    };
    let mut trace = TraceBuilder::new("streams and overlap", on_gpu, clock);
    let lanes = timeline.iter().map(|s| s.lane + 1).max().unwrap_or(0);
    let tracks: Vec<_> = (0..lanes)
        .map(|lane| {
            trace.track(if on_gpu {
                format!("GPU stream {lane}")
            } else {
                format!("worker thread {lane} (stands in for stream {lane})")
            })
        })
        .collect();
    for step in timeline {
        let cat = if step.step == "compute" {
            "kernel"
        } else {
            "copy"
        };
        let name = format!("{} (chunk {})", step.step, step.chunk);
        trace.span(tracks[step.lane], name, cat, step.start_ms, step.end_ms);
    }
    trace.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lane_is_a_track_with_its_chunks_steps_in_microseconds() {
        let step = |lane, step, chunk, start_ms: f64| StepSpan {
            lane,
            step,
            chunk,
            start_ms,
            end_ms: start_ms + 0.5,
        };
        let timeline = vec![
            step(0, "copy in", 0, 0.0),
            step(1, "copy in", 1, 0.5),
            step(0, "compute", 0, 0.5),
            step(0, "copy out", 0, 1.0),
        ];
        let t = trace_of(&timeline, true);
        let names: Vec<_> = t
            .trace_events
            .iter()
            .filter(|e| e.name == "thread_name")
            .map(|e| e.args.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["GPU stream 0", "GPU stream 1"]);
        let compute = t
            .trace_events
            .iter()
            .find(|e| e.name == "compute (chunk 0)")
            .unwrap();
        assert_eq!((compute.tid, compute.cat), (1, "kernel"));
        assert!((compute.ts - 500.0).abs() < 1e-9 && (compute.dur.unwrap() - 500.0).abs() < 1e-9);
        let on_lane_1 = t.trace_events.iter().filter(|e| e.ph == "X" && e.tid == 2);
        assert_eq!(on_lane_1.count(), 1);
    }
}
