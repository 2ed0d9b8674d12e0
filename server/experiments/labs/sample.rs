//! What one run of a lab setting measured, on either backend: its speed, its own
//! timer's reading against the true time, its losses, where a step's time went, and
//! its steps on the host clock. The CPU and GPU loops fill it; grading and the result
//! read it, and [`super::timeline`] draws it.

use std::time::Instant;

use serde::Serialize;

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
