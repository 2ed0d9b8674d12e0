//! Calibrating a loop of work to a target duration on a device whose speed changes
//! while it is measured. A GPU at rest idles at a low clock (an H100 or H200 at about
//! 345 MHz) and boosts to about 1,980 MHz only after some milliseconds of work, so one
//! tiny probe timed right after start measures the idle clock: scaled up, the "5 ms"
//! kernel then takes about a sixth of that once the GPU has boosted. [`calibrate`]
//! first keeps the device busy for at least [`WARMUP_MS`], then measures and rescales
//! until one measurement lands within [`TOLERANCE`] of the target (or [`MAX_TRIES`] are
//! spent), and reports what it achieved, so a result states the time its kernels really
//! took rather than the one asked for.
//!
//! It is a pure function of a `measure(iterations) → milliseconds` closure: the GPU
//! passes a CUDA-event-timed kernel, the CPU stand-ins a host-timed busy loop, and the
//! tests a model of a GPU that boosts.

use serde::Serialize;

/// Work done before calibrating, in milliseconds of measured time: long enough for a
/// GPU to leave its idle clock.
pub const WARMUP_MS: f64 = 50.0;
/// A measurement within this fraction of the target is accepted.
pub const TOLERANCE: f64 = 0.10;
/// Measurements after the warm-up before giving up.
pub const MAX_TRIES: u32 = 12;
/// Warm-up measurements at most (a device whose work takes no time must still stop).
const MAX_WARMUP_CALLS: u32 = 64;
/// The most one measurement may grow or shrink the iteration count: a probe dominated
/// by launch overhead would otherwise overshoot by orders of magnitude.
const MAX_STEP: f64 = 16.0;

/// What calibration settled on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Calibration {
    /// The duration asked for, ms.
    pub target_ms: f64,
    /// Loop iterations per launch it settled on.
    pub iterations: u64,
    /// The last measurement, at `iterations`, ms.
    pub achieved_ms: f64,
    /// Measured work before calibrating began, ms.
    pub warmup_ms: f64,
    /// Measurements after the warm-up.
    pub tries: u32,
    /// Whether `achieved_ms` is within ±10% of `target_ms` (false: the device could not
    /// be brought there, e.g. one iteration already takes longer than the target).
    pub converged: bool,
}

/// Whether `ms` is within [`TOLERANCE`] of `target_ms`.
pub fn on_target(ms: f64, target_ms: f64) -> bool {
    (ms / target_ms - 1.0).abs() <= TOLERANCE
}

/// `iterations` scaled so that a run taking `ms` would take `target_ms`, by at most
/// [`MAX_STEP`] either way, within `1..=max`.
fn rescale(iterations: u64, ms: f64, target_ms: f64, max: u64) -> u64 {
    let factor = if ms > 0.0 && ms.is_finite() {
        (target_ms / ms).clamp(1.0 / MAX_STEP, MAX_STEP)
    } else {
        MAX_STEP
    };
    ((iterations as f64 * factor).round() as u64).clamp(1, max.max(1))
}

/// Keeps a device busy for at least `min_ms` of measured work before anything is timed:
/// calls `measure(iterations)` from `first` (at most `max`), rescaling the work so each
/// call takes about `per_call_ms`, and returns the milliseconds measured and the
/// iteration count the last measurement suggests. Matmul warms up each size with it
/// after the CPU's turn has let the GPU idle.
pub fn warm_up<E>(
    min_ms: f64,
    per_call_ms: f64,
    first: u64,
    max: u64,
    mut measure: impl FnMut(u64) -> Result<f64, E>,
) -> Result<(f64, u64), E> {
    let mut iterations = first.clamp(1, max.max(1));
    let (mut spent, mut calls) = (0.0, 0);
    while spent < min_ms && calls < MAX_WARMUP_CALLS {
        let ms = measure(iterations)?;
        spent += ms.max(0.0);
        calls += 1;
        iterations = rescale(iterations, ms, per_call_ms, max);
    }
    Ok((spent, iterations))
}

/// Warms the device up, then finds the iteration count whose run takes `target_ms`
/// (within ±10%), starting from `first` and never above `max`. `measure(iterations)`
/// runs the work once (or a few times) and returns its milliseconds per run.
pub fn calibrate<E>(
    target_ms: f64,
    first: u64,
    max: u64,
    mut measure: impl FnMut(u64) -> Result<f64, E>,
) -> Result<Calibration, E> {
    // Warm-up runs aim at a few milliseconds each, whatever the target, so that short
    // targets (a streams chunk's copy) do not need thousands of launches to add up.
    let per_call_ms = target_ms.max(WARMUP_MS / 8.0);
    let (warmup_ms, mut iterations) = warm_up(WARMUP_MS, per_call_ms, first, max, &mut measure)?;
    let mut tries = 0;
    loop {
        tries += 1;
        let ms = measure(iterations)?;
        let converged = on_target(ms, target_ms);
        if converged || tries == MAX_TRIES {
            return Ok(Calibration {
                target_ms,
                iterations,
                achieved_ms: ms,
                warmup_ms,
                tries,
                converged,
            });
        }
        iterations = rescale(iterations, ms, target_ms, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// A GPU that idles at 345 MHz and climbs linearly to 1,980 MHz over its first
    /// `ramp_ms` of work (H100/H200's idle and boost clocks), running a loop of
    /// `cycles` clocks per iteration after a fixed launch cost.
    struct BoostingGpu {
        worked_ms: f64,
        ramp_ms: f64,
        cycles: f64,
        launch_ms: f64,
    }

    impl BoostingGpu {
        fn cold() -> Self {
            Self {
                worked_ms: 0.0,
                ramp_ms: 30.0,
                cycles: 64.0,
                launch_ms: 0.005,
            }
        }

        fn mhz(&self) -> f64 {
            345.0 + (1980.0 - 345.0) * (self.worked_ms / self.ramp_ms).min(1.0)
        }

        fn run(&mut self, iterations: u64) -> f64 {
            let ms = self.launch_ms + iterations as f64 * self.cycles / (self.mhz() * 1e3);
            self.worked_ms += ms;
            ms
        }
    }

    /// What the timing trap did before: time one 4,096-iteration probe right after
    /// start and scale it to the target.
    fn one_probe(gpu: &mut BoostingGpu, target_ms: f64) -> u64 {
        let probe = 4096;
        gpu.run(probe);
        let ms = gpu.run(probe);
        (probe as f64 * target_ms / ms) as u64
    }

    fn calibrated(gpu: &mut BoostingGpu, target_ms: f64) -> Calibration {
        calibrate::<Infallible>(target_ms, 4096, 50_000_000, |it| Ok(gpu.run(it))).unwrap()
    }

    #[test]
    fn a_cold_gpu_that_boosts_is_calibrated_to_the_target_once_warm() {
        for target in [5.0, 0.35, 0.04] {
            let mut gpu = BoostingGpu::cold();
            let c = calibrated(&mut gpu, target);
            assert!(c.converged, "{c:?}");
            assert!(c.warmup_ms >= WARMUP_MS, "{c:?}");
            assert!(on_target(c.achieved_ms, target), "{c:?}");
            // The experiment's kernels that follow take what was reported.
            let then = gpu.run(c.iterations);
            assert!(on_target(then, target), "target {target}: {then} ms, {c:?}");
        }
    }

    #[test]
    fn the_old_one_probe_calibration_misses_on_the_same_gpu() {
        // The check above, applied to the one-probe calibration, fails: its "5 ms"
        // kernel takes about 345/1980 of that once the clock has boosted.
        let mut gpu = BoostingGpu::cold();
        let iterations = one_probe(&mut gpu, 5.0);
        gpu.run(iterations * 20);
        let then = gpu.run(iterations);
        assert!(!on_target(then, 5.0), "{then} ms");
        assert!(then < 1.0, "{then} ms");
    }

    #[test]
    fn a_target_the_device_cannot_reach_is_reported_as_not_converged() {
        // Every run costs at least 0.2 ms of launch: a 0.05 ms target is out of reach.
        let mut gpu = BoostingGpu {
            launch_ms: 0.2,
            ..BoostingGpu::cold()
        };
        let c = calibrated(&mut gpu, 0.05);
        assert!(!c.converged, "{c:?}");
        assert_eq!((c.iterations, c.tries), (1, MAX_TRIES));
        assert!(c.achieved_ms >= 0.2);
        // A device whose work takes no time at all still stops, at the cap.
        let c = calibrate::<Infallible>(1.0, 1, 1000, |_| Ok(0.0)).unwrap();
        assert_eq!((c.iterations, c.converged), (1000, false));
    }

    #[test]
    fn warming_up_brings_a_cold_gpu_to_its_boost_clock() {
        // Matmul's use: a product of fixed size, `k` of them per measurement.
        let mut gpu = BoostingGpu::cold();
        let (spent, _) =
            warm_up::<Infallible>(WARMUP_MS, 6.0, 1, 1 << 20, |k| Ok(gpu.run(k * 100))).unwrap();
        assert!(spent >= WARMUP_MS);
        assert_eq!(gpu.mhz(), 1980.0);
        // Without it, the first product is timed at the idle clock: 5.7 times slower.
        let (mut cold, mut warm) = (BoostingGpu::cold(), gpu);
        assert!(cold.run(100_000) > 5.0 * warm.run(100_000));
    }

    #[test]
    fn rescaling_moves_at_most_sixteenfold_and_stays_in_range() {
        assert_eq!(rescale(100, 1.0, 2.0, 1000), 200);
        assert_eq!(rescale(100, 0.001, 5.0, 1_000_000), 1600);
        assert_eq!(rescale(100, 100.0, 1.0, 1000), 6);
        assert_eq!(rescale(100, f64::NAN, 1.0, 1000), 1000);
        assert_eq!(rescale(1, 10.0, 1.0, 1000), 1);
    }
}
