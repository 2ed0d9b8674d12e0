//! What one run of a lab setting measured, on either backend: its speed, its own
//! timer's reading against the true time, its losses, where a step's time went, and
//! its steps on the host clock. The CPU and GPU loops fill it, [`super::timeline`]
//! draws it, and [`Measured`] summarises a setting's rounds for grading and the result.

use std::time::Instant;

use serde::Serialize;

use super::catalog::Knobs;
use super::memory::{self, MemoryProfile};
use crate::measure::{Summary, summarize};

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSample {
    /// Tickets trained per second, from the first enqueue to the last step's end.
    pub samples_per_sec: f64,
    /// The loop's own timer (host clock around the loop, synchronised first only with
    /// `timer_sync`) over the true time per step.
    pub timer_ratio: f64,
    /// The loss of the first step.
    pub first_loss: f32,
    /// The loss of the last step.
    pub final_loss: f32,
    /// Where a step's time went.
    pub profile: TimeProfile,
    /// The run on the host clock, for its trace.
    pub clock: RunClock,
}

/// One run on the host clock: the readings `samples_per_sec` comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct RunClock {
    /// When the run's clock started (right before its first enqueue).
    pub started: Instant,
    /// Each optimiser step's time in the loop, `(start, end)` in ms from `started`:
    /// staging and copying its batch, enqueueing it, and any loss read.
    pub steps: Vec<(f64, f64)>,
    /// When the last step finished (the final loss read returned), ms from `started`:
    /// the wall time samples/s is computed from.
    pub wall_ms: f64,
}

impl RunClock {
    /// A clock starting now.
    pub fn start(steps: usize) -> Self {
        Self {
            started: Instant::now(),
            steps: Vec::with_capacity(steps),
            wall_ms: 0.0,
        }
    }

    /// Milliseconds since the clock started.
    pub fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }
}

impl RunSample {
    /// Back-to-back runs of one setting as one sample: tickets over the total time (the
    /// harmonic mean of the runs' rates, as every run trains the same tickets), the
    /// timer's and the profile's means, and the losses of the last run (every run of a
    /// setting starts from the same weights, so they are the same in each).
    pub fn combine(runs: &[RunSample]) -> RunSample {
        let Some(last) = runs.last().cloned() else {
            return RunSample {
                samples_per_sec: f64::NAN,
                timer_ratio: f64::NAN,
                first_loss: f32::NAN,
                final_loss: f32::NAN,
                profile: TimeProfile::default(),
                clock: RunClock::start(0),
            };
        };
        let n = runs.len() as f64;
        let mean = |f: fn(&RunSample) -> f64| runs.iter().map(f).sum::<f64>() / n;
        let seconds_per_sample = mean(|r| 1.0 / r.samples_per_sec);
        RunSample {
            samples_per_sec: 1.0 / seconds_per_sample,
            timer_ratio: mean(|r| r.timer_ratio),
            profile: TimeProfile {
                step_ms: mean(|r| r.profile.step_ms),
                copy_ms: mean(|r| r.profile.copy_ms),
                sync_wait_ms: mean(|r| r.profile.sync_wait_ms),
                compute_ms: mean(|r| r.profile.compute_ms),
                optimizer_ms: mean(|r| r.profile.optimizer_ms),
            },
            ..last
        }
    }
}

/// One setting's measurements over the rounds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Measured {
    /// The setting.
    pub knobs: Knobs,
    /// Samples per second, one per round.
    pub samples: Vec<f64>,
    /// Their median and spread.
    pub samples_per_sec: Summary,
    /// The loss at the last step (the same in every round: the run is deterministic).
    pub final_loss: f32,
    /// The loss at the first step.
    pub first_loss: f32,
    /// The loop's timer over the true time per step, one per round.
    pub timer_ratio: Vec<f64>,
    /// Where the time of a step went, in milliseconds (medians over the rounds).
    pub profile: TimeProfile,
    /// The allocator model's figures for this setting.
    pub memory: MemoryProfile,
}

fn median(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    summarize(&v).map_or(f64::NAN, |s| s.median)
}

/// One setting's rounds, summarised.
pub fn measured(knobs: &Knobs, runs: &[RunSample]) -> Measured {
    let samples: Vec<f64> = runs.iter().map(|r| r.samples_per_sec).collect();
    let last = runs.last();
    Measured {
        knobs: *knobs,
        samples_per_sec: summarize(&samples).unwrap_or(Summary::NONE),
        samples,
        final_loss: last.map_or(f32::NAN, |r| r.final_loss),
        first_loss: last.map_or(f32::NAN, |r| r.first_loss),
        timer_ratio: runs.iter().map(|r| r.timer_ratio).collect(),
        profile: TimeProfile {
            step_ms: median(runs.iter().map(|r| r.profile.step_ms)),
            copy_ms: median(runs.iter().map(|r| r.profile.copy_ms)),
            sync_wait_ms: median(runs.iter().map(|r| r.profile.sync_wait_ms)),
            compute_ms: median(runs.iter().map(|r| r.profile.compute_ms)),
            optimizer_ms: median(runs.iter().map(|r| r.profile.optimizer_ms)),
        },
        memory: memory::profile(knobs),
    }
}

/// Where one step's time goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct TimeProfile {
    /// Wall time per step.
    pub step_ms: f64,
    /// Host time per step staging and copying batches.
    pub copy_ms: f64,
    /// Host time per step waiting for the device (loss reads, timer syncs).
    pub sync_wait_ms: f64,
    /// Device time per step in the forward and backward pass.
    pub compute_ms: f64,
    /// Device time per step in the optimiser update.
    pub optimizer_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_combine_as_total_tickets_over_total_time() {
        let run = |sps, ratio, step_ms| RunSample {
            samples_per_sec: sps,
            timer_ratio: ratio,
            first_loss: 1.0,
            final_loss: 0.25,
            profile: TimeProfile {
                step_ms,
                ..TimeProfile::default()
            },
            clock: RunClock::start(0),
        };
        // The same tickets at 100/s (1 s) and 300/s (1/3 s): 2 × tickets in 4/3 s.
        let one = RunSample::combine(&[run(100.0, 0.5, 2.0), run(300.0, 1.5, 4.0)]);
        assert!((one.samples_per_sec - 150.0).abs() < 1e-9, "{one:?}");
        assert!((one.timer_ratio - 1.0).abs() < 1e-12);
        assert!((one.profile.step_ms - 3.0).abs() < 1e-12);
        assert_eq!((one.first_loss, one.final_loss), (1.0, 0.25));
        assert!(RunSample::combine(&[]).samples_per_sec.is_nan());
    }
}
