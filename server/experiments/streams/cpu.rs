//! The streams experiment's CPU stand-in: the same copy-in, compute, copy-out pipeline
//! on worker threads. Each chunk is copied into the worker's staging buffer, "computed"
//! by the busy loop ([`cpu::busy`], calibrated by the same [`calibrate`] as the kernel
//! to take about as long as the copy) and copied out. The loop runs in registers and
//! leaves the chunk as it was: running the kernel's loop on every element instead
//! would take a CPU many times longer than the copy, even at one step, and the
//! pipeline would no longer be balanced. The same [`output::check`] judges the output
//! with zero steps (output = input): a lost copy in leaves the previous chunk's data in
//! the staging buffer, and a chunk copied out to the wrong place lands on other values,
//! since the input differs from chunk to chunk.

use std::sync::mpsc;
use std::time::Instant;

use super::{MIB, REPS, StepSpan, StreamsParams, StreamsResult, StreamsRun, note, output};
use super::{speedups, stream_counts};
use crate::cpu;
use crate::experiments::ExperimentError;
use crate::measure::calibrate::calibrate;
use crate::measure::{Deadline, HostClock, Reps, repeat};

/// A chunk's number, its input and where its output goes.
type Chunk<'a> = (usize, &'a [f32], &'a mut [f32]);

/// Each chunk is copied in (to the worker's staging buffer), computed and copied out
/// (to `output`) by one of `staging.len()` workers, chunks round-robin; returns each
/// step's span. Buffers are allocated and touched by the caller, so what is timed is
/// copying and computing, not page faults.
fn pipeline(
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

/// Runs the comparison on the CPU.
pub(super) fn run(
    p: &StreamsParams,
    deadline: &Deadline,
) -> Result<StreamsResult, ExperimentError> {
    let per_chunk = p.chunk_mib * MIB / size_of::<f32>();
    let mut input = vec![0.0f32; per_chunk * p.chunks];
    output::fill_input(&mut input);
    let mut staging = vec![0.0f32; per_chunk];
    let copy = repeat::<_, ExperimentError>(&mut HostClock::default(), REPS, deadline, || {
        staging.copy_from_slice(std::hint::black_box(&input[..per_chunk]));
        std::hint::black_box(&mut staging);
        Ok(())
    })?;
    let once = Reps {
        warmups: 0,
        timed: 1,
    };
    let calibration = calibrate(copy.median, 1000, 1 << 36, |iterations| {
        repeat::<_, ExperimentError>(&mut HostClock::default(), once, deadline, || {
            std::hint::black_box(cpu::busy(iterations));
            Ok(())
        })
        .map(|ms| ms.median)
    })?;
    let iterations = calibration.iterations;
    let compute_ms =
        repeat::<_, ExperimentError>(&mut HostClock::default(), REPS, deadline, || {
            std::hint::black_box(cpu::busy(iterations));
            Ok(())
        })?;
    let mut runs = Vec::new();
    let mut verdict = Ok(());
    let mut reference: Option<Vec<f32>> = None;
    let mut best: Option<(f64, Vec<StepSpan>)> = None;
    let mut output = vec![0.0f32; input.len()];
    for threads in stream_counts(p.streams) {
        let mut buffers = vec![vec![1.0f32; per_chunk]; threads];
        let mut timeline = Vec::new();
        let mut clock = HostClock::default();
        let total_ms = repeat::<_, ExperimentError>(&mut clock, REPS, deadline, || {
            timeline = pipeline(&input, &mut output, &mut buffers, per_chunk, iterations);
            Ok(())
        })?;
        // The checked run: an output that was not written stays NaN.
        output.fill(f32::NAN);
        pipeline(&input, &mut output, &mut buffers, per_chunk, iterations);
        let what = format!("{threads} threads");
        note(
            &mut verdict,
            &what,
            output::check(&input, &output, per_chunk, 0),
        );
        match &reference {
            None => reference = Some(output.clone()),
            Some(expected) if *expected != output => note(
                &mut verdict,
                &what,
                Err("the output differs from the one-thread run's".into()),
            ),
            Some(_) => {}
        }
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
    let timeline = best.map(|(_, t)| t).unwrap_or_default();
    Ok(StreamsResult {
        chunks: p.chunks,
        chunk_bytes: (per_chunk * size_of::<f32>()) as u64,
        copy_ms: copy.median,
        compute_ms: compute_ms.median,
        compute_copy_ratio: compute_ms.median / copy.median,
        calibration,
        runs,
        trace: super::lanes::trace_of(&timeline, false),
        timeline,
        outputs_match: verdict.is_ok(),
        output_error: verdict.err(),
    })
}
