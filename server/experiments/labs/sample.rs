//! What one run of a lab setting measured, on either backend: its speed, its own
//! timer's reading against the true time, its losses, and where a step's time went.
//! The CPU and GPU loops fill it; grading and the result read it.

use serde::Serialize;

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
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
