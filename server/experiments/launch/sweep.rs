//! The measurement both backends share: for each chain length, each way of submitting
//! the chain (one launch per kernel, one graph replay, one fused kernel) is warmed up
//! and repeated; each repetition is a [`Sample`] of host and device spans on one clock,
//! summarised into medians with their spread, and the last one goes into the trace.
//! A backend only has to run one chain one way ([`Runner`]).

use serde::Serialize;

use super::{LaunchPoint, LaunchResult, WayResult};
use crate::experiments::ExperimentError;
use crate::experiments::trace::TraceBuilder;
use crate::measure::{Deadline, Summary, summarize};

/// Untimed repetitions before the timed ones, per chain length and way.
pub const WARMUPS: usize = 2;
/// Timed repetitions per chain length and way.
pub const REPEATS: usize = 9;

/// The three ways of submitting a chain of tiny kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// One launch call per kernel (PyTorch's eager mode).
    Eager,
    /// The chain captured once as a CUDA graph and replayed with one call (on the CPU:
    /// the whole chain handed to the worker as one batch).
    Graph,
    /// One kernel doing all the chain's steps (what a compiler's fusion produces).
    Fused,
}

impl Way {
    /// All three, in the order they are run and drawn.
    pub const ALL: [Way; 3] = [Way::Eager, Way::Graph, Way::Fused];

    /// Index into per-way arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One repetition of one chain, in ms since the start of the run, on one clock.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Each launch call on the host: its label, start and end.
    pub calls: Vec<(String, f64, f64)>,
    /// The host waiting for the work to finish.
    pub sync: (f64, f64),
    /// The work as the device (or the worker thread) ran it.
    pub work: Vec<(String, f64, f64)>,
}

impl Sample {
    fn first_call(&self) -> f64 {
        self.calls.first().map_or(self.sync.0, |c| c.1)
    }
    /// Host time spent in the launch calls, µs.
    pub fn submit_us(&self) -> f64 {
        (self.calls.last().map_or(self.sync.0, |c| c.2) - self.first_call()) * 1e3
    }
    /// First work start to last work end, µs (gaps between kernels included).
    pub fn device_us(&self) -> f64 {
        match (self.work.first(), self.work.last()) {
            (Some(a), Some(b)) => (b.2 - a.1) * 1e3,
            _ => f64::NAN,
        }
    }
    /// First launch call to the end of the wait, µs: what the program experiences.
    pub fn wall_us(&self) -> f64 {
        (self.sync.1 - self.first_call()) * 1e3
    }
}

/// Runs one chain of `kernels` steps one way, on its own buffer.
pub trait Runner {
    /// One repetition.
    fn run(&mut self, way: Way, kernels: usize) -> Result<Sample, ExperimentError>;
    /// Puts `data` in every way's buffer.
    fn load(&mut self, data: &[f32]) -> Result<(), ExperimentError>;
    /// `way`'s buffer, read back (after the work queued before).
    fn read(&mut self, way: Way) -> Result<Vec<f32>, ExperimentError>;
}

/// The chain lengths measured up to `max`: 1, 10, 100, 1,000 and `max` itself.
pub fn lengths(max: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [1, 10, 100, 1000]
        .into_iter()
        .filter(|&n| n < max)
        .collect();
    out.push(max.max(1));
    out
}

fn summary(samples: &[f64]) -> Result<Summary, ExperimentError> {
    summarize(samples).ok_or_else(|| ExperimentError::Failed("a timing was not finite".into()))
}

/// Measures every chain length and way on `runner`, tracing the last repetition of each.
pub fn sweep(
    runner: &mut dyn Runner,
    max_kernels: usize,
    trace: &mut TraceBuilder,
    deadline: &Deadline,
) -> Result<Vec<LaunchPoint>, ExperimentError> {
    let host = trace.track("CPU: launch calls and waits");
    let device = trace.track(if trace.on_gpu() {
        "GPU stream"
    } else {
        "worker thread (stands in for the GPU stream)"
    });
    let mut points = Vec::new();
    for kernels in lengths(max_kernels) {
        let mut ways = Vec::with_capacity(3);
        let mut walls: Vec<Vec<f64>> = Vec::with_capacity(3);
        for way in Way::ALL {
            let mut samples = Vec::with_capacity(REPEATS);
            for rep in 0..WARMUPS + REPEATS {
                deadline.check()?;
                let sample = runner.run(way, kernels)?;
                if rep >= WARMUPS {
                    samples.push(sample);
                }
            }
            let field = |f: fn(&Sample) -> f64| -> Vec<f64> { samples.iter().map(f).collect() };
            let last = samples.last().cloned().unwrap_or_default();
            for (label, s, e) in &last.calls {
                trace.span(host, label.clone(), "launch", *s, *e);
            }
            let word = format!("{kernels} × {way:?}").to_lowercase();
            trace.span(
                host,
                format!("synchronize ({word})"),
                "sync",
                last.sync.0,
                last.sync.1,
            );
            for (label, s, e) in &last.work {
                trace.span(device, label.clone(), "kernel", *s, *e);
            }
            walls.push(field(Sample::wall_us));
            ways.push(WayResult {
                way,
                calls: last.calls.len(),
                submit_us: summary(&field(Sample::submit_us))?,
                device_us: summary(&field(Sample::device_us))?,
                wall_us: summary(&field(Sample::wall_us))?,
                traced_wall_us: last.wall_us(),
            });
        }
        let ratio = |other: usize| -> Result<Summary, ExperimentError> {
            let pairs: Vec<f64> = walls[0]
                .iter()
                .zip(&walls[other])
                .map(|(eager, o)| eager / o.max(1e-9))
                .collect();
            summary(&pairs)
        };
        let saved = (ways[0].wall_us.median - ways[1].wall_us.median) / kernels as f64;
        points.push(LaunchPoint {
            kernels,
            saved_per_step_us: saved,
            graph_speedup: ratio(Way::Graph.index())?,
            fused_speedup: ratio(Way::Fused.index())?,
            ways,
        });
    }
    Ok(points)
}

/// The result from the points: the prediction's figure is the host time per launch
/// call of the longest eager chain.
pub fn finish(
    elements: usize,
    points: Vec<LaunchPoint>,
    outputs_match: bool,
    detail: String,
    trace: TraceBuilder,
) -> LaunchResult {
    let launch_us = points
        .last()
        .map_or(f64::NAN, |p| p.ways[0].submit_us.median / p.kernels as f64);
    LaunchResult {
        elements,
        launch_us,
        points,
        outputs_match,
        output_check: detail,
        trace: trace.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_powers_of_ten_below_the_maximum_and_the_maximum() {
        assert_eq!(lengths(1), vec![1]);
        assert_eq!(lengths(100), vec![1, 10, 100]);
        assert_eq!(lengths(250), vec![1, 10, 100, 250]);
        assert_eq!(lengths(1000), vec![1, 10, 100, 1000]);
    }

    #[test]
    fn a_sample_reads_submit_device_and_wall_time_off_its_spans() {
        let s = Sample {
            calls: vec![("a".into(), 1.0, 1.002), ("b".into(), 1.002, 1.005)],
            sync: (1.005, 1.050),
            work: vec![("k".into(), 1.010, 1.020), ("k".into(), 1.030, 1.040)],
        };
        assert!((s.submit_us() - 5.0).abs() < 1e-6);
        assert!((s.device_us() - 30.0).abs() < 1e-6);
        assert!((s.wall_us() - 50.0).abs() < 1e-6);
    }
}
