//! Experiment: streams and overlap (lesson 5, building on lesson 4's pinned memory).
//! The data is split into chunks; each chunk is copied to the device, processed by a
//! kernel (`busy_f32`, calibrated so one chunk's compute takes about as long as its
//! copy) and copied back. With one stream the three steps of every chunk run in turn;
//! with more streams, chunks go round-robin over them and one chunk's copies can run
//! while another computes. The same pipeline from pageable memory shows the overlap
//! vanish. Every run's output is checked against the serial run's, and the fastest
//! multi-stream run is drawn as a timeline, one lane per stream.
//!
//! The CPU stand-in runs the same pipeline on threads (memcpy in, the calibrated busy
//! loop, memcpy out): more threads let chunks proceed side by side, up to the number of
//! cores. Same idea, not the same hardware, and the result says which it measured.

use std::fmt::Write as _;
use std::sync::mpsc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::{Experiment, ExperimentError, ParamError, Rule};
use crate::config::Limits;
use crate::cpu;
use crate::gpu::{DeviceBuffer, Gpu, Kernels, Marks, Stream};
use crate::measure::{Deadline, HostClock, Reps, Summary, repeat};

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
#[serde(deny_unknown_fields)]
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
    /// Milliseconds of compute per chunk (measured alone, median).
    pub compute_ms: f64,
    /// Every configuration, one stream first.
    pub runs: Vec<StreamsRun>,
    /// The fastest multi-stream run, step by step.
    pub timeline: Vec<StepSpan>,
    /// Whether every run's output matched the one-stream run's, byte for byte.
    pub outputs_match: bool,
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
    pinned_in.fill(1.0);
    let pageable_in = vec![1.0f32; total];
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
    // Calibrate: one chunk's copy, and a probe kernel scaled to match it.
    let mut clock = gpu.event_clock()?;
    let copy = repeat(&mut clock, REPS, deadline, || {
        main.copy_to_device(&pinned_in[..per_chunk], &mut device[0])
            .map_err(ExperimentError::from)
    })?;
    let probe = 256u32;
    let probe_ms = repeat(&mut clock, REPS, deadline, || {
        kernels
            .busy(&main, &mut device[0], probe, blocks)
            .map_err(ExperimentError::from)
    })?;
    let iterations =
        ((f64::from(probe) * copy.median / probe_ms.median.max(1e-6)) as u32).clamp(1, 1 << 24);
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
    let mut outputs_match = true;
    let configs = stream_counts(p.streams)
        .into_iter()
        .map(|s| (s, "pinned"))
        .chain([(p.streams.max(1), "pageable")]);
    for (streams, memory) in configs {
        let lanes = lanes(&main, streams)?;
        let mut clock = gpu.event_clock()?;
        let total_ms = repeat(&mut clock, REPS, deadline, || {
            for lane in &lanes {
                lane.join(&main)?;
            }
            if memory == "pinned" {
                pipeline.queue(&lanes, pinned_in, pinned_out, &mut device, None)?;
            } else {
                pipeline.queue(&lanes, &pageable_in, &mut pageable_out, &mut device, None)?;
            }
            join_all(&main, &lanes)
        })?;
        main.sync()?;
        let output: &[f32] = if memory == "pinned" {
            pinned_out
        } else {
            &pageable_out
        };
        match &reference {
            None => reference = Some(output.to_vec()),
            Some(expected) => outputs_match &= expected.as_slice() == output,
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
        runs,
        timeline,
        outputs_match,
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

/// A chunk's number, its input and where its output goes.
type Chunk<'a> = (usize, &'a [f32], &'a mut [f32]);

/// The CPU stand-in: each chunk is copied in (to the worker's staging buffer),
/// computed and copied out (to `output`) by one of `staging.len()` workers, chunks
/// round-robin; returns each step's span. Buffers are allocated and touched by the
/// caller, so what is timed is copying and computing, not page faults.
fn cpu_pipeline(
    input: &[f32],
    output: &mut [f32],
    staging: &mut [Vec<f32>],
    per_chunk: usize,
    iterations: u64,
) -> Vec<StepSpan> {
    let threads = staging.len().max(1);
    let mut assigned: Vec<Vec<Chunk<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for (chunk, (source, target)) in input
        .chunks(per_chunk)
        .zip(output.chunks_mut(per_chunk))
        .enumerate()
    {
        assigned[chunk % threads].push((chunk, source, target));
    }
    let t0 = Instant::now();
    let ms = move || t0.elapsed().as_secs_f64() * 1e3;
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for (lane, (work, buffer)) in assigned.into_iter().zip(staging.iter_mut()).enumerate() {
            let tx = tx.clone();
            scope.spawn(move || {
                for (chunk, source, target) in work {
                    let a = ms();
                    buffer[..source.len()].copy_from_slice(source);
                    let b = ms();
                    std::hint::black_box(cpu::busy(iterations));
                    let c = ms();
                    target.copy_from_slice(&buffer[..target.len()]);
                    let d = ms();
                    let _ = tx.send((chunk, lane, [a, b, c, d]));
                }
            });
        }
    });
    drop(tx);
    let mut timeline: Vec<StepSpan> = rx
        .into_iter()
        .flat_map(|(chunk, lane, at)| {
            ["copy in", "compute", "copy out"]
                .into_iter()
                .enumerate()
                .map(move |(i, step)| StepSpan {
                    lane,
                    step,
                    chunk,
                    start_ms: at[i],
                    end_ms: at[i + 1],
                })
        })
        .collect();
    timeline.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    timeline
}

fn run_cpu(p: &StreamsParams, deadline: &Deadline) -> Result<StreamsResult, ExperimentError> {
    let per_chunk = p.chunk_mib * MIB / size_of::<f32>();
    let input: Vec<f32> = (0..per_chunk * p.chunks)
        .map(|i| (i % 1024) as f32)
        .collect();
    let mut staging = vec![0.0f32; per_chunk];
    let copy = repeat::<_, ExperimentError>(&mut HostClock::default(), REPS, deadline, || {
        staging.copy_from_slice(std::hint::black_box(&input[..per_chunk]));
        std::hint::black_box(&mut staging);
        Ok(())
    })?;
    let iterations = cpu::busy_iterations_for_ms(copy.median);
    let compute = repeat::<_, ExperimentError>(&mut HostClock::default(), REPS, deadline, || {
        std::hint::black_box(cpu::busy(iterations));
        Ok(())
    })?;
    let mut runs = Vec::new();
    let mut outputs_match = true;
    let mut best: Option<(f64, Vec<StepSpan>)> = None;
    let mut output = vec![0.0f32; input.len()];
    for threads in stream_counts(p.streams) {
        let mut buffers = vec![vec![1.0f32; per_chunk]; threads];
        output.fill(0.0);
        let mut timeline = Vec::new();
        let mut clock = HostClock::default();
        let total_ms = repeat::<_, ExperimentError>(&mut clock, REPS, deadline, || {
            timeline = cpu_pipeline(&input, &mut output, &mut buffers, per_chunk, iterations);
            Ok(())
        })?;
        outputs_match &= output == input;
        if threads > 1 && best.as_ref().is_none_or(|(ms, _)| total_ms.median < *ms) {
            best = Some((total_ms.median, timeline));
        }
        runs.push(StreamsRun {
            streams: threads,
            memory: "host",
            total_ms,
            speedup: f64::NAN,
        });
    }
    speedups(&mut runs);
    Ok(StreamsResult {
        chunks: p.chunks,
        chunk_bytes: (per_chunk * size_of::<f32>()) as u64,
        copy_ms: copy.median,
        compute_ms: compute.median,
        runs,
        timeline: best.map(|(_, t)| t).unwrap_or_default(),
        outputs_match,
    })
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
            "{} chunks of {} MiB, each copied in, processed by a kernel calibrated to take about as long as one chunk's copy, and copied out; chunks round-robin over 1, 2, 4 … {} streams (CPU: worker threads, memcpy and a busy loop); whole pipeline timed with CUDA events (CPU: host clock), {} warm-up then median of {}; outputs compared with the one-stream run",
            p.chunks, p.chunk_mib, p.streams, REPS.warmups, REPS.timed
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
        run_cpu(p, deadline)
    }

    fn table(_: &StreamsParams, r: &StreamsResult) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} chunks of {} bytes; one chunk: copy {:.3} ms, compute {:.3} ms",
            r.chunks, r.chunk_bytes, r.copy_ms, r.compute_ms
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
        let _ = writeln!(
            out,
            "outputs {} the one-stream run",
            if r.outputs_match {
                "match"
            } else {
                "DIFFER from"
            }
        );
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
        let judge = |r: &StreamsResult| {
            let steps = r.timeline.len() == 3 * r.chunks;
            (
                r.outputs_match && steps && r.runs.iter().all(|run| run.total_ms.median > 0.0),
                format!(
                    "outputs match: {}, {} timeline steps for {} chunks, speedups {:?}",
                    r.outputs_match,
                    r.timeline.len(),
                    r.chunks,
                    r.runs
                        .iter()
                        .map(|run| (run.speedup * 100.0).round() / 100.0)
                        .collect::<Vec<_>>()
                ),
            )
        };
        let mut checks = vec![checked(
            "streams: CPU threads compute what one thread does",
            run_cpu(&small, &deadline),
            judge,
        )];
        match gpu {
            Some(gpu) => checks.push(checked(
                "streams: multi-stream and pageable runs compute what one stream does",
                run_gpu(gpu, &small, &deadline),
                judge,
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
        let r = run_cpu(&p, &Deadline::after(Duration::from_secs(60))).unwrap();
        assert!(r.outputs_match);
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
