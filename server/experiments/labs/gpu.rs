//! One lab run on the GPU: the training run's device loop
//! (`training::gpu::DeviceRun`) driven with the lab's knobs. A host-fed loop gathers
//! each batch in host memory (pageable, or copied into page-locked memory first) and
//! copies it over the rows the step reads; `non_blocking` with pinned memory queues
//! that copy on a side stream one step ahead (the prefetch), from two alternating
//! page-locked buffers, each refilled only after its last copy ran; without
//! `non_blocking` a copy from pinned memory waits for its stream, as PyTorch's does. The loss is read every `log_every` steps; the timer is the host
//! clock around the loop, synchronised first only with `timer_sync`. Each optimiser
//! step's host time in the loop (all its micro-batches) is kept for the trace.
//!
//! Gradient accumulation runs `accumulation` micro-batches per optimiser step, summing
//! their gradients on the device and updating the weights once per step
//! (`DeviceRun::micro_step`), as the CPU loop does; the memory lab grades memory
//! through the allocator model, not this loop.

use std::time::Instant;

use super::cpu::train_params;
use super::knobs::Knobs;
use super::sample::{RunClock, RunSample, TimeProfile};
use crate::experiments::ExperimentError;
use crate::experiments::training::gpu::DeviceRun;
use crate::experiments::training::model::Tickets;
use crate::gpu::{Gpu, PinnedBuffer};
use crate::measure::Deadline;

/// Runs `steps` optimiser steps with `knobs` on `gpu`.
pub fn run(
    gpu: &mut Gpu,
    knobs: &Knobs,
    steps: usize,
    data: &Tickets,
    deadline: &Deadline,
) -> Result<RunSample, ExperimentError> {
    let micro_steps = steps.max(1) * knobs.accumulation.max(1);
    let params = train_params(knobs, micro_steps);
    let micro = params.batch;
    let mut run = DeviceRun::new(gpu, &params, data)?;
    let main = run.stream.clone();
    let side = main.fork()?;
    let mut pinned: Vec<PinnedBuffer<f32>> = Vec::new();
    if knobs.pinned && !knobs.data_on_device {
        for _ in 0..2 {
            pinned.push(gpu.pinned::<f32>(micro * crate::experiments::training::FEATURES)?);
        }
    }
    let prefetch = knobs.non_blocking && !pinned.is_empty();
    main.sync()?;
    let (mut copying, mut waited) = (0.0f64, 0.0f64);
    let mut first_loss = f32::NAN;
    let feed = |run: &mut DeviceRun,
                pinned: &mut Vec<PinnedBuffer<f32>>,
                s: usize|
     -> Result<(), ExperimentError> {
        let (x, _) = data.batch(s, micro);
        if pinned.is_empty() {
            return run.feed(&main, s, &x);
        }
        let buffer = pinned[s % 2].as_mut_slice()?;
        buffer.copy_from_slice(&x);
        if prefetch {
            return run.feed(&side, s, buffer);
        }
        // Without non_blocking the copy is a blocking one, as PyTorch's `.to(device)`
        // is: it returns once the stream has run it. It must, besides: this buffer is
        // refilled two steps on, and a copy from pinned memory still queued would then
        // carry the later batch (a race no CPU run could show).
        run.feed(&main, s, buffer)?;
        Ok(main.sync()?)
    };
    let mut clock = RunClock::start(steps.max(1));
    let start = clock.started;
    let mut began = 0.0;
    if prefetch && !knobs.data_on_device {
        feed(&mut run, &mut pinned, 0)?;
    }
    for s in 0..micro_steps {
        deadline.check()?;
        if s > 0 && s.is_multiple_of(knobs.accumulation.max(1)) {
            began = clock.now_ms();
        }
        if !knobs.data_on_device {
            let t = Instant::now();
            if prefetch {
                main.join(&side)?;
                side.sync()?; // the buffer of step s + 1 was last used two steps ago
                if s + 1 < micro_steps {
                    feed(&mut run, &mut pinned, s + 1)?;
                }
            } else {
                feed(&mut run, &mut pinned, s)?;
            }
            copying += t.elapsed().as_secs_f64();
        }
        if knobs.recompute {
            run.recompute_hidden(s)?;
        }
        let of = knobs.accumulation.max(1);
        run.micro_step(s, s % of, of)?;
        let optimizer_step = (s + 1).is_multiple_of(knobs.accumulation.max(1));
        let nth = (s + 1) / knobs.accumulation.max(1);
        // The first loss is read too, so "the loss still falls" has its start.
        if optimizer_step && (nth.is_multiple_of(knobs.log_every) || nth == 1) {
            let t = Instant::now();
            let loss = run.read_loss()?;
            waited += t.elapsed().as_secs_f64();
            if first_loss.is_nan() {
                first_loss = loss;
            }
        }
        if optimizer_step {
            clock.steps.push((began, clock.now_ms()));
        }
    }
    if knobs.timer_sync {
        main.sync()?;
    }
    let timer = start.elapsed().as_secs_f64();
    let final_loss = run.read_loss()?;
    let wall = start.elapsed().as_secs_f64();
    clock.wall_ms = wall * 1e3;
    let per_step = |s: f64| s * 1e3 / steps.max(1) as f64;
    Ok(RunSample {
        samples_per_sec: (knobs.batch * steps.max(1)) as f64 / wall.max(1e-9),
        timer_ratio: timer / wall.max(1e-9),
        first_loss: if first_loss.is_nan() {
            final_loss
        } else {
            first_loss
        },
        final_loss,
        profile: TimeProfile {
            step_ms: per_step(wall),
            copy_ms: per_step(copying),
            sync_wait_ms: per_step(waited),
            // The device's own split is not timed here (it would need an event pair
            // per kernel group); the panel shows the host-side parts.
            compute_ms: f64::NAN,
            optimizer_ms: f64::NAN,
        },
        clock,
    })
}
