//! Experiment: streams and overlap (lesson 5, building on lesson 4's pinned memory).
//! The data is split into chunks; each chunk is copied to the device, processed by a
//! kernel (`busy_f32`, which transforms each element from its own value, calibrated on
//! a warmed-up GPU so one chunk's compute takes about as long as its copy) and copied
//! back. With one stream the three steps of every chunk run in turn;
//! with more streams, chunks go round-robin over them and one chunk's copies can run
//! while another computes. The same pipeline from pageable memory shows the overlap
//! vanish. After each configuration's timed runs one more run is checked: its output,
//! filled with NaN beforehand, must be the input transformed chunk by chunk
//! ([`output`]: a lost or misordered copy shows) and equal the one-stream run's byte
//! for byte. The fastest multi-stream run is drawn as a timeline, one lane per stream.
//!
//! The CPU stand-in ([`cpu`]) runs the same pipeline on threads: more threads let
//! chunks proceed side by side, up to the number of cores. Same idea, not the same
//! hardware, and the result says which it measured. The timeline also travels as a
//! Chrome trace, one track per stream ([`lanes`]).

mod cpu;
mod lanes;
pub mod output;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::{Experiment, ExperimentError, ParamError, Rule};
use crate::config::Limits;
use crate::gpu::{DeviceBuffer, Gpu, Kernels, Marks, Stream};
use crate::measure::calibrate::{Calibration, calibrate};
use crate::measure::{Deadline, Reps, Summary, repeat};

/// One untimed run, then timed runs per configuration.
pub const REPS: Reps = Reps {
    warmups: 1,
    timed: 5,
};
/// Most streams (or threads) a student may ask for.
pub const MAX_STREAMS: u64 = 8;
/// Most chunks.
pub const MAX_CHUNKS: u64 = 32;
const MIB: usize = 1 << 20;

/// What the student asks for.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StreamsParams {
    /// How many chunks the data is split into.
    pub chunks: usize,
    /// Size of one chunk in MiB (chunks × this is capped by the transfer cap).
    pub chunk_mib: usize,
    /// The most streams to compare with one (runs use 1, 2, 4 … up to this).
    pub streams: usize,
}

impl Default for StreamsParams {
    fn default() -> Self {
        Self {
            chunks: 8,
            chunk_mib: 8,
            streams: 4,
        }
    }
}

/// One configuration's time for the whole pipeline.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StreamsRun {
    /// Streams (GPU) or worker threads (CPU stand-in).
    pub streams: usize,
    /// `pinned` or `pageable` host memory (GPU), `host` (CPU stand-in).
    pub memory: &'static str,
    /// Milliseconds for all chunks, copies and compute included.
    pub total_ms: Summary,
    /// The one-stream pinned (or one-thread) median ÷ this median.
    pub speedup: f64,
}

/// One step of one chunk on the timeline, in ms from the run's start.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StepSpan {
    /// The stream (or thread) it ran on, from 0.
    pub lane: usize,
    /// `copy in`, `compute` or `copy out`.
    pub step: &'static str,
    /// The chunk, from 0.
    pub chunk: usize,
    /// Start, ms.
    pub start_ms: f64,
    /// End, ms.
    pub end_ms: f64,
}

/// The comparison.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StreamsResult {
    /// Chunks per run.
    pub chunks: usize,
    /// Bytes per chunk.
    pub chunk_bytes: u64,
    /// Milliseconds to copy one chunk in (measured alone, median).
    pub copy_ms: f64,
    /// Milliseconds of compute per chunk (measured alone, median, after calibration).
    pub compute_ms: f64,
    /// `compute_ms ÷ copy_ms`: the balance the speed-up depends on (about 1 when the
    /// calibration reached its target).
    pub compute_copy_ratio: f64,
    /// How the compute step was sized to the copy: warm-up, tries, what it achieved.
    pub calibration: Calibration,
    /// Every configuration, one stream first.
    pub runs: Vec<StreamsRun>,
    /// The fastest multi-stream run, step by step.
    pub timeline: Vec<StepSpan>,
    /// Whether every configuration's checked run computed the input's transform (on
    /// sampled elements, against the CPU's loop) and matched the one-stream run's
    /// output byte for byte.
    pub outputs_match: bool,
    /// The first disagreement, when `outputs_match` is false.
    pub output_error: Option<String>,
    /// The timeline as a Chrome trace, one track per stream (or thread).
    pub trace: crate::experiments::trace::Trace,
}

/// Folds one checked run into the running verdict: `Ok` keeps it, the first `Err`
/// is kept.
fn note(verdict: &mut Result<(), String>, what: &str, outcome: Result<(), String>) {
    if let (Ok(()), Err(e)) = (&*verdict, outcome) {
        *verdict = Err(format!("{what}: {e}"));
    }
}

/// The selftest's verdict: every checked run computed the input's transform, the
/// timeline has three steps per chunk, every run took time; with `calibrated`, the
/// compute step also reached its target (within ±10% of the copy when calibrated).
fn judge(r: &StreamsResult, calibrated: bool) -> (bool, String) {
    let steps = r.timeline.len() == 3 * r.chunks;
    let timed = r.runs.iter().all(|run| run.total_ms.median > 0.0);
    let balanced = !calibrated || r.calibration.converged;
    (
        r.outputs_match && steps && timed && balanced,
        format!(
            "outputs: {}; {} timeline steps for {} chunks; compute/copy {:.2} (calibration {} after {} tries); speedups {:?}",
            r.output_error.as_deref().unwrap_or("right"),
            r.timeline.len(),
            r.chunks,
            r.compute_copy_ratio,
            if r.calibration.converged {
                "converged"
            } else {
                "did not converge"
            },
            r.calibration.tries,
            r.runs
                .iter()
                .map(|run| (run.speedup * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        ),
    )
}

/// Stream counts to compare: 1, 2, 4 … and `max` itself.
pub fn stream_counts(max: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1), |n| Some(n * 2))
        .take_while(|n| *n < max)
        .collect();
    counts.push(max.max(1));
    counts
}

fn speedups(runs: &mut [StreamsRun]) {
    let serial = runs.first().map_or(f64::NAN, |r| r.total_ms.median);
    for run in runs {
        run.speedup = serial / run.total_ms.median;
    }
}

/// One chunk's pipeline on the GPU, queued on `stream`.
struct GpuPipeline<'a> {
    kernels: &'a Kernels,
    iterations: u32,
    blocks: u32,
}

impl GpuPipeline<'_> {
    /// Queues every chunk over `lanes` round-robin (marks around each step when
    /// given); the caller joins the lanes.
    fn queue(
        &self,
        lanes: &[Stream],
        input: &[f32],
        output: &mut [f32],
        device: &mut [DeviceBuffer<f32>],
        mut marks: Option<&mut Marks>,
    ) -> Result<(), ExperimentError> {
        let per_chunk = input.len() / device.len();
        let chunks = input.chunks(per_chunk).zip(output.chunks_mut(per_chunk));
        for (c, ((host_in, host_out), buffer)) in chunks.zip(device.iter_mut()).enumerate() {
            let lane = &lanes[c % lanes.len()];
            if let Some(m) = marks.as_deref_mut() {
                m.record(lane)?;
            }
            lane.copy_to_device(host_in, buffer)?;
            if let Some(m) = marks.as_deref_mut() {
                m.record(lane)?;
            }
            self.kernels
                .busy(lane, buffer, self.iterations, self.blocks)?;
            if let Some(m) = marks.as_deref_mut() {
                m.record(lane)?;
            }
            lane.copy_to_host(buffer, host_out)?;
            if let Some(m) = marks.as_deref_mut() {
                m.record(lane)?;
            }
        }
        Ok(())
    }
}

/// `count` streams forked from `main` (each starts after what `main` has queued).
fn lanes(main: &Stream, count: usize) -> Result<Vec<Stream>, ExperimentError> {
    (0..count)
        .map(|_| main.fork().map_err(ExperimentError::from))
        .collect()
}

fn join_all(main: &Stream, lanes: &[Stream]) -> Result<(), ExperimentError> {
    for lane in lanes {
        main.join(lane)?;
    }
    Ok(())
}

/// Kernel timings per calibration measurement (median).
const CALIBRATION_REPS: Reps = Reps {
    warmups: 0,
    timed: 3,
};

fn run_gpu(
    gpu: &mut Gpu,
    p: &StreamsParams,
    deadline: &Deadline,
) -> Result<StreamsResult, ExperimentError> {
    let kernels = gpu.kernels();
    let main = gpu.stream().clone();
    let per_chunk = p.chunk_mib * MIB / size_of::<f32>();
    let total = per_chunk * p.chunks;
    let mut pinned_in = gpu.pinned::<f32>(total)?;
    let mut pinned_out = gpu.pinned::<f32>(total)?;
    let pinned_in = pinned_in.as_mut_slice()?;
    let pinned_out = pinned_out.as_mut_slice()?;
    output::fill_input(pinned_in);
    let pageable_in = pinned_in.to_vec();
    let mut pageable_out = vec![0.0f32; total];
    let mut device: Vec<DeviceBuffer<f32>> = (0..p.chunks)
        .map(|_| main.zeros::<f32>(per_chunk))
        .collect::<Result<_, _>>()?;
    let blocks = gpu
        .card()
        .sm_count
        .unwrap_or(80)
        .saturating_mul(4)
        .min(65_535);
    // Calibrate: one chunk's copy, then (on a warmed-up GPU) the kernel to match it.
    let mut clock = gpu.event_clock()?;
    let copy = repeat(&mut clock, REPS, deadline, || {
        main.copy_to_device(&pinned_in[..per_chunk], &mut device[0])
            .map_err(ExperimentError::from)
    })?;
    let calibration = calibrate(copy.median, 256, 1 << 24, |iterations| {
        let iterations = u32::try_from(iterations).unwrap_or(u32::MAX);
        repeat(&mut clock, CALIBRATION_REPS, deadline, || {
            kernels
                .busy(&main, &mut device[0], iterations, blocks)
                .map_err(ExperimentError::from)
        })
        .map(|ms| ms.median)
    })?;
    let iterations = u32::try_from(calibration.iterations).unwrap_or(u32::MAX);
    let compute = repeat(&mut clock, REPS, deadline, || {
        kernels
            .busy(&main, &mut device[0], iterations, blocks)
            .map_err(ExperimentError::from)
    })?;
    let pipeline = GpuPipeline {
        kernels: &kernels,
        iterations,
        blocks,
    };
    let mut runs = Vec::new();
    let mut reference: Option<Vec<f32>> = None;
    let mut verdict = Ok(());
    let configs = stream_counts(p.streams)
        .into_iter()
        .map(|s| (s, "pinned"))
        .chain([(p.streams.max(1), "pageable")]);
    for (streams, memory) in configs {
        let lanes = lanes(&main, streams)?;
        let pinned = memory == "pinned";
        let input: &[f32] = if pinned { &*pinned_in } else { &pageable_in };
        let output: &mut [f32] = if pinned {
            &mut *pinned_out
        } else {
            &mut pageable_out
        };
        let run_once = |out: &mut [f32], device: &mut [DeviceBuffer<f32>]| {
            for lane in &lanes {
                lane.join(&main)?;
            }
            pipeline.queue(&lanes, input, out, device, None)?;
            join_all(&main, &lanes)
        };
        let mut clock = gpu.event_clock()?;
        let total_ms = repeat(&mut clock, REPS, deadline, || run_once(output, &mut device))?;
        // The checked run: an output that was not written stays NaN.
        main.sync()?;
        output.fill(f32::NAN);
        run_once(output, &mut device)?;
        main.sync()?;
        let what = format!("{streams} streams, {memory}");
        note(
            &mut verdict,
            &what,
            output::check(input, output, per_chunk, u64::from(iterations)),
        );
        match &reference {
            None => reference = Some(output.to_vec()),
            Some(expected) => note(
                &mut verdict,
                &what,
                if expected.as_slice() == &*output {
                    Ok(())
                } else {
                    Err("the output differs from the one-stream run's".into())
                },
            ),
        }
        runs.push(StreamsRun {
            streams,
            memory,
            total_ms,
            speedup: f64::NAN,
        });
    }
    speedups(&mut runs);
    let best = runs
        .iter()
        .filter(|r| r.memory == "pinned" && r.streams > 1)
        .min_by(|a, b| a.total_ms.median.total_cmp(&b.total_ms.median))
        .map_or(1, |r| r.streams);
    let timeline = {
        let lanes = lanes(&main, best)?;
        let mut marks = gpu.marks();
        marks.record(&main)?;
        for lane in &lanes {
            lane.join(&main)?;
        }
        pipeline.queue(&lanes, pinned_in, pinned_out, &mut device, Some(&mut marks))?;
        join_all(&main, &lanes)?;
        main.sync()?;
        spans(&marks.offsets_ms()?[1..], lanes.len())
    };
    Ok(StreamsResult {
        chunks: p.chunks,
        chunk_bytes: (per_chunk * size_of::<f32>()) as u64,
        copy_ms: copy.median,
        compute_ms: compute.median,
        compute_copy_ratio: compute.median / copy.median,
        calibration,
        runs,
        trace: lanes::trace_of(&timeline, true),
        timeline,
        outputs_match: verdict.is_ok(),
        output_error: verdict.err(),
    })
}

/// Four marks per chunk (before copy in, compute, copy out, after) → three spans.
fn spans(offsets: &[f64], lanes: usize) -> Vec<StepSpan> {
    offsets
        .chunks(4)
        .enumerate()
        .flat_map(|(chunk, m)| {
            ["copy in", "compute", "copy out"]
                .into_iter()
                .enumerate()
                .filter(move |(i, _)| i + 1 < m.len())
                .map(move |(i, step)| StepSpan {
                    lane: chunk % lanes.max(1),
                    step,
                    chunk,
                    start_ms: m[i],
                    end_ms: m[i + 1],
                })
        })
        .collect()
}

/// The experiment.
pub struct Streams;

impl Experiment for Streams {
    const NAME: &'static str = "streams";
    const DIRECTIVE: &'static str = "streams-overlap";
    const LESSON: &'static str = "async-and-timing";
    const TITLE: &'static str = "Streams: overlapping copies with compute";
    const SUMMARY: &'static str = "A copy-in, compute, copy-out pipeline over 1, 2, 4 … streams, from pinned and pageable memory";
    type Params = StreamsParams;
    type Output = StreamsResult;

    const PREDICT: &'static [Quantity] = &[Quantity {
        key: "streams.best_speedup",
        unit: "×",
        scale: Scale::Ratio,
        on: On::Any,
        when: None,
    }];

    fn measure(key: &str, _: &StreamsParams, r: &StreamsResult) -> Option<f64> {
        if key != "streams.best_speedup" {
            return None;
        }
        r.runs
            .iter()
            .filter(|run| run.streams > 1 && run.memory != "pageable")
            .map(|run| run.speedup)
            .reduce(f64::max)
    }

    fn rules(limits: &Limits) -> Vec<Rule> {
        vec![
            Rule::Range {
                field: "chunks",
                min: 2,
                max: MAX_CHUNKS,
                cap: false,
            },
            Rule::Range {
                field: "chunk_mib",
                min: 1,
                max: (limits.max_transfer_bytes >> 20).max(1),
                cap: true,
            },
            Rule::Range {
                field: "streams",
                min: 1,
                max: MAX_STREAMS,
                cap: false,
            },
        ]
    }

    fn check(p: &StreamsParams, limits: &Limits) -> Result<(), ParamError> {
        let bytes = (p.chunks * p.chunk_mib) as u64 * MIB as u64;
        if bytes > limits.max_transfer_bytes {
            return Err(ParamError::Invalid(format!(
                "chunks × chunk_mib is {} MiB, more than this server's cap of {} MiB",
                bytes >> 20,
                limits.max_transfer_bytes >> 20
            )));
        }
        Ok(())
    }

    fn method(p: &StreamsParams) -> String {
        format!(
            "{} chunks of {} MiB, each copied in, transformed in place by a kernel calibrated (after ≥ {} ms of warm-up work, to within ±{}%) to take about as long as one chunk's copy, and copied out; chunks round-robin over 1, 2, 4 … {} streams (CPU: worker threads, memcpy and the same loop per element); whole pipeline timed with CUDA events (CPU: host clock), {} warm-up then median of {}; one more run per configuration checked against the CPU's loop on sampled elements and against the one-stream run",
            p.chunks,
            p.chunk_mib,
            crate::measure::calibrate::WARMUP_MS,
            crate::measure::calibrate::TOLERANCE * 100.0,
            p.streams,
            REPS.warmups,
            REPS.timed
        )
    }

    fn run_gpu(
        gpu: &mut Gpu,
        p: &StreamsParams,
        deadline: &Deadline,
    ) -> Result<StreamsResult, ExperimentError> {
        run_gpu(gpu, p, deadline)
    }

    fn run_cpu(p: &StreamsParams, deadline: &Deadline) -> Result<StreamsResult, ExperimentError> {
        cpu::run(p, deadline)
    }

    fn table(_: &StreamsParams, r: &StreamsResult) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} chunks of {} bytes; one chunk: copy {:.3} ms, compute {:.3} ms (compute/copy {:.2}; calibration {} after {} tries)",
            r.chunks,
            r.chunk_bytes,
            r.copy_ms,
            r.compute_ms,
            r.compute_copy_ratio,
            if r.calibration.converged {
                "converged"
            } else {
                "did not converge"
            },
            r.calibration.tries
        );
        let _ = writeln!(
            out,
            "{:>8}  {:>9}  {:>12}  {:>8}",
            "streams", "memory", "total ms", "speedup"
        );
        for run in &r.runs {
            let _ = writeln!(
                out,
                "{:>8}  {:>9}  {:>12.3}  {:>7.2}×",
                run.streams, run.memory, run.total_ms.median, run.speedup
            );
        }
        let _ = match &r.output_error {
            None => writeln!(
                out,
                "outputs checked: every run computed the input's transform"
            ),
            Some(e) => writeln!(out, "outputs WRONG: {e}"),
        };
        out
    }

    fn describe(p: &StreamsParams) -> String {
        format!(
            "Splits {} MiB into {} chunks and runs a copy-in, compute, copy-out pipeline over one stream and over up to {} streams, from pinned and from pageable memory, then draws which steps overlapped.",
            crate::format::thousands((p.chunks * p.chunk_mib) as f64),
            p.chunks,
            p.streams
        )
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let deadline = Deadline::after(std::time::Duration::from_secs(60));
        let small = StreamsParams {
            chunks: 4,
            chunk_mib: 1,
            streams: 2,
        };
        let mut checks = vec![checked(
            "streams: CPU threads compute what one thread does",
            cpu::run(&small, &deadline),
            |r| judge(r, false),
        )];
        match gpu {
            Some(gpu) => checks.push(checked(
                "streams: multi-stream and pageable runs compute what one stream does",
                run_gpu(gpu, &small, &deadline),
                |r| judge(r, true),
            )),
            None => checks.push(no_gpu("streams: multi-stream runs on the GPU")),
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stream_counts_double_up_to_the_maximum() {
        assert_eq!(stream_counts(1), vec![1]);
        assert_eq!(stream_counts(4), vec![1, 2, 4]);
        assert_eq!(stream_counts(6), vec![1, 2, 4, 6]);
    }

    #[test]
    fn the_cpu_stand_in_overlaps_chunks_on_threads() {
        let p = StreamsParams {
            chunks: 6,
            chunk_mib: 1,
            streams: 2,
        };
        let r = cpu::run(&p, &Deadline::after(Duration::from_secs(60))).unwrap();
        assert!(r.outputs_match, "{:?}", r.output_error);
        assert!(r.calibration.warmup_ms >= crate::measure::calibrate::WARMUP_MS);
        assert!(r.compute_copy_ratio > 0.0 && r.calibration.iterations >= 1);
        assert!(judge(&r, false).0, "{}", judge(&r, false).1);
        assert_eq!(r.runs.len(), 2);
        assert_eq!(r.runs[0].speedup, 1.0);
        assert_eq!(r.timeline.len(), 18);
        let lanes: std::collections::BTreeSet<usize> = r.timeline.iter().map(|s| s.lane).collect();
        assert_eq!(lanes.len(), 2, "both threads ran chunks");
        for span in &r.timeline {
            assert!(span.end_ms >= span.start_ms);
        }
    }
}
