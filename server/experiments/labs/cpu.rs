//! One lab run on the CPU backend, shaped like a GPU loop so the knobs act as they do
//! there. The training step runs on a "device" thread that takes work from a queue, as
//! a CUDA stream does; the loop's own thread prepares batches and enqueues steps
//! without waiting. Reading the loss waits for the queue to drain (a sync), and a host
//! clock read without a sync measures only the enqueueing, as lesson 5 shows on a GPU.
//!
//! A batch from host memory is gathered into a fresh buffer and copied once more (the
//! CPU's stand-in for the host→device copy); a resident data set is read in place.
//! `pinned` and `non_blocking` change nothing here (see [`super::knobs::Knob`]).
//! The step itself is the training run's reference step ([`crate::experiments::training::model`]),
//! with gradient accumulation over micro-batches and optional recomputation of layer 1.
//! Each step's host time in the loop is kept for the trace ([`super::timeline`]).

use std::sync::mpsc;
use std::time::Instant;

use super::knobs::Knobs;
use super::sample::{RunClock, RunSample, TimeProfile};
use crate::cpu::{Mat, gemm};
use crate::experiments::ExperimentError;
use crate::experiments::training::TrainParams;
use crate::experiments::training::TrainPrecision;
use crate::experiments::training::model::{
    DATASET, FEATURES, Mlp, Optimizer, Tickets, loss_and_grads,
};
use crate::measure::Deadline;

/// The parameters of the training model a lab setting trains with.
pub fn train_params(k: &Knobs, steps: usize) -> TrainParams {
    TrainParams {
        batch: k.batch / k.accumulation,
        hidden: k.hidden,
        steps,
        log_every: k.log_every.min(steps).max(1),
        precision: k.precision,
        optimizer: k.optimizer,
    }
}

enum Work {
    /// A step on a batch the host staged (tickets, labels).
    Staged(Vec<f32>, Vec<usize>),
    /// A step on batch `step` of the resident data set.
    Resident(usize),
    /// Reply once everything before has run, with the latest loss.
    Sync(mpsc::Sender<f32>),
}

/// Runs `steps` training steps with `knobs` on the CPU's queued "device".
pub fn run(
    knobs: &Knobs,
    steps: usize,
    data: &Tickets,
    deadline: &Deadline,
) -> Result<RunSample, ExperimentError> {
    let steps = steps.max(1);
    std::thread::scope(|scope| {
        let (queue, work) = mpsc::channel::<Work>();
        let device = scope.spawn(move || device(knobs, steps, data, &work));
        let mut waited = 0.0f64;
        let mut copying = 0.0f64;
        let mut sync = |queue: &mpsc::Sender<Work>| -> Result<f32, ExperimentError> {
            let t = Instant::now();
            let (reply, answer) = mpsc::channel();
            queue.send(Work::Sync(reply)).map_err(|_| gone())?;
            let loss = answer.recv().map_err(|_| gone());
            waited += t.elapsed().as_secs_f64();
            loss
        };
        let mut clock = RunClock::start(steps);
        let start = clock.started;
        for step in 0..steps {
            deadline.check()?;
            let began = clock.now_ms();
            if knobs.data_on_device {
                queue.send(Work::Resident(step)).map_err(|_| gone())?;
            } else {
                // Pageable staging, then the copy (the CPU's host→device transfer).
                let t = Instant::now();
                let (x, y) = data.batch(step, knobs.batch);
                let copied = std::hint::black_box(x.clone());
                copying += t.elapsed().as_secs_f64();
                queue.send(Work::Staged(copied, y)).map_err(|_| gone())?;
            }
            if (step + 1).is_multiple_of(knobs.log_every) {
                std::hint::black_box(sync(&queue)?);
            }
            clock.steps.push((began, clock.now_ms()));
        }
        if knobs.timer_sync {
            sync(&queue)?;
        }
        let timer = start.elapsed().as_secs_f64();
        let last = sync(&queue)?;
        let wall = start.elapsed().as_secs_f64();
        clock.wall_ms = wall * 1e3;
        drop(queue);
        let (losses, compute, optimizer) = device.join().map_err(|_| gone())?;
        let per_step = |s: f64| s * 1e3 / steps as f64;
        let first = losses.first().copied().unwrap_or(f32::NAN);
        let total = (knobs.batch * steps) as f64;
        Ok(RunSample {
            samples_per_sec: total / wall.max(1e-9),
            timer_ratio: timer / wall.max(1e-9),
            first_loss: first,
            final_loss: last,
            profile: TimeProfile {
                step_ms: per_step(wall),
                copy_ms: per_step(copying),
                sync_wait_ms: per_step(waited),
                compute_ms: per_step(compute),
                optimizer_ms: per_step(optimizer),
            },
            clock,
        })
    })
}

fn gone() -> ExperimentError {
    ExperimentError::Failed("the CPU device thread stopped".into())
}

/// The "device": takes steps off the queue and runs them; returns every step's loss and
/// the seconds spent in the forward and backward passes and in the optimiser.
fn device(
    knobs: &Knobs,
    steps: usize,
    data: &Tickets,
    work: &mpsc::Receiver<Work>,
) -> (Vec<f32>, f64, f64) {
    let params = train_params(knobs, steps);
    let mut model = Mlp::init(knobs.hidden);
    let mut opt = Optimizer::new(&params, &model);
    let bf16 = knobs.precision == TrainPrecision::Bf16;
    // The resident copy: the tickets twice over, so every batch is one window.
    let (xs, ys) = if knobs.data_on_device {
        (
            [&data.x[..], &data.x[..]].concat(),
            [&data.y[..], &data.y[..]].concat(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mut losses = Vec::with_capacity(steps);
    let (mut compute, mut optimizer) = (0.0f64, 0.0f64);
    let mut step = |x: &[f32], y: &[usize]| {
        let t = Instant::now();
        let micro = y.len() / knobs.accumulation.max(1);
        let mut total: Option<[Vec<f32>; 4]> = None;
        let mut loss = 0.0;
        for (xm, ym) in x.chunks(micro * FEATURES).zip(y.chunks(micro)) {
            if knobs.recompute {
                // The backward pass recomputes layer 1 instead of keeping it.
                let mut z1 = vec![0.0; ym.len() * knobs.hidden];
                gemm(
                    Mat::new(xm, ym.len(), FEATURES),
                    Mat::new(&model.w1, FEATURES, knobs.hidden),
                    0.0,
                    &mut z1,
                );
                std::hint::black_box(&z1);
            }
            let (l, grads) = loss_and_grads(&model, xm, ym, bf16);
            loss += l / knobs.accumulation as f32;
            match &mut total {
                None => total = Some(grads),
                Some(sum) => sum
                    .iter_mut()
                    .zip(&grads)
                    .for_each(|(s, g)| s.iter_mut().zip(g).for_each(|(s, g)| *s += g)),
            }
        }
        if let Some(mut grads) = total {
            let scale = 1.0 / knobs.accumulation as f32;
            grads.iter_mut().flatten().for_each(|g| *g *= scale);
            let u = Instant::now();
            compute += u.duration_since(t).as_secs_f64();
            opt.step(&mut model, &grads);
            optimizer += u.elapsed().as_secs_f64();
        }
        loss
    };
    for item in work {
        match item {
            Work::Staged(x, y) => losses.push(step(&x, &y)),
            Work::Resident(s) => {
                let first = (s * knobs.batch) % DATASET;
                let end = first + knobs.batch;
                losses.push(step(&xs[first * FEATURES..end * FEATURES], &ys[first..end]));
            }
            Work::Sync(reply) => {
                let _ = reply.send(losses.last().copied().unwrap_or(f32::NAN));
            }
        }
    }
    (losses, compute, optimizer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::labs::knobs::SLOW;
    use crate::experiments::training::Optim;
    use std::time::Duration;

    #[test]
    fn a_timer_without_a_sync_reads_short_and_with_one_reads_true() {
        let data = Tickets::generate();
        let deadline = Deadline::after(Duration::from_secs(60));
        let quiet = Knobs {
            batch: 128,
            log_every: 1000,
            data_on_device: true,
            ..SLOW
        };
        // Three runs each way, and the best of them: one preemption of a few ms between
        // the timer and the final sync (or while enqueueing) on a loaded box moves one
        // run's ratio by tenths, and it must not decide the test.
        let runs = |knobs: &Knobs| -> Vec<RunSample> {
            (0..3)
                .map(|_| run(knobs, 20, &data, &deadline).unwrap())
                .collect()
        };
        let unsynced = runs(&quiet);
        let synced = runs(&Knobs {
            timer_sync: true,
            ..quiet
        });
        let ratios = |runs: &[RunSample]| runs.iter().map(|r| r.timer_ratio).collect::<Vec<_>>();
        let (unsynced_ratios, synced_ratios) = (ratios(&unsynced), ratios(&synced));
        let best_synced = synced_ratios.iter().copied().fold(0.0, f64::max);
        let best_unsynced = unsynced_ratios
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        // Without a sync the clock stops before the queue has drained (about 0.0003 of
        // the true time on a quiet box); with one it covers every step (about 0.999).
        assert!(best_synced > 0.9, "{synced_ratios:?}");
        assert!(
            best_unsynced < 0.5 * best_synced,
            "{unsynced_ratios:?} {synced_ratios:?}"
        );
        let synced = &synced[0];
        assert!(synced.final_loss < synced.first_loss, "{synced:?}");
    }

    #[test]
    fn accumulation_trains_like_one_big_batch() {
        let data = Tickets::generate();
        let deadline = Deadline::after(Duration::from_secs(60));
        let one = Knobs {
            batch: 64,
            data_on_device: true,
            log_every: 100,
            optimizer: Optim::Sgd,
            ..SLOW
        };
        let four = Knobs {
            accumulation: 4,
            recompute: true,
            ..one
        };
        let (a, b) = (
            run(&one, 10, &data, &deadline).unwrap(),
            run(&four, 10, &data, &deadline).unwrap(),
        );
        let gap = (a.final_loss - b.final_loss).abs() / a.final_loss;
        assert!(gap < 1e-3, "{a:?} vs {b:?}");
    }
}
