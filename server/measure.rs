//! How GPU Lab measures, in one place: repeated samples summarised as a median with
//! its spread, a per-job [`Deadline`], and [`repeat`], the one timing loop every
//! experiment uses (warm-ups, then timed repetitions, checking the deadline before each)
//! over any [`Clock`]: the host clock here, CUDA events in `gpu::timer`.
//!
//! It depends on nothing else in the crate, so the CPU reference, the GPU layer and the
//! experiments can all use it. [`calibrate`] sizes a busy loop to a target duration on a
//! device that warms up while it is measured; [`recorded`] keeps every interval a clock
//! timed, so a trace can draw the samples a summary was made from.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::spread;

pub mod calibrate;
pub mod recorded;

/// Median and spread of one set of samples.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Summary {
    /// Middle sample (mean of the two middle ones for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// How many samples.
    pub samples: usize,
    /// First quartile (25th percentile): with `q3`, the interquartile range panels draw.
    pub q1: f64,
    /// Third quartile (75th percentile).
    pub q3: f64,
    /// Samples outside Tukey's fences (1.5 IQR beyond the quartiles): stray runs.
    pub outliers: usize,
    /// Whether the IQR settled within 10% of the median (see [`crate::spread`]); a point
    /// that did not settle in its time budget is reported as noisy.
    pub stable: bool,
}

impl Summary {
    /// The summary of no samples: every figure NaN, unsettled.
    pub const NONE: Summary = Summary {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
        samples: 0,
        q1: f64::NAN,
        q3: f64::NAN,
        outliers: 0,
        stable: false,
    };

    /// For a summary of milliseconds per sample of `count` back-to-back runs: the
    /// milliseconds per run (every figure divided by `count`).
    pub fn per_run(self, count: usize) -> Summary {
        let each = |ms: f64| ms / count.max(1) as f64;
        Summary {
            median: each(self.median),
            min: each(self.min),
            max: each(self.max),
            q1: each(self.q1),
            q3: each(self.q3),
            ..self
        }
    }

    /// For a summary of milliseconds per run: `amount` per second, as a summary (the
    /// fastest run gives the largest rate). Exact for the median with an odd count.
    pub fn per_second(self, amount: f64) -> Summary {
        let rate = |ms: f64| amount / (ms.max(1e-9) / 1e3);
        Summary {
            median: rate(self.median),
            min: rate(self.max),
            max: rate(self.min),
            samples: self.samples,
            q1: rate(self.q3),
            q3: rate(self.q1),
            outliers: self.outliers,
            stable: self.stable,
        }
    }
}

/// Summarises `samples`; `None` when there are none or any is not finite.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let q1 = spread::quantile(&sorted, 0.25)?;
    let q3 = spread::quantile(&sorted, 0.75)?;
    Some(Summary {
        median,
        min: sorted[0],
        max: sorted[n - 1],
        samples: n,
        q1,
        q3,
        outliers: spread::outliers(&sorted, q1, q3),
        stable: n >= 3 && spread::settled(q1, q3, median),
    })
}

/// A measurement that ran past its job's time limit: the message is for the student.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PastDeadline(pub &'static str);

impl From<Infallible> for PastDeadline {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// The moment a job must stop, and what the student reads when it does.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    message: &'static str,
}

/// What a student reads when a sweep passes the per-job time limit.
pub const TRY_SMALLER: &str =
    "the experiment ran past its time limit and was stopped; try a smaller size";
/// What a student reads when a training run passes the per-job time limit.
pub const TRY_FEWER_STEPS: &str =
    "the training run passed its time limit and was stopped; try fewer steps";

impl Deadline {
    /// `limit` from now, with the sweep message.
    pub fn after(limit: Duration) -> Self {
        Self {
            at: Instant::now() + limit,
            message: TRY_SMALLER,
        }
    }

    /// The same moment with another message (e.g. [`TRY_FEWER_STEPS`]).
    pub fn saying(self, message: &'static str) -> Self {
        Self { message, ..self }
    }

    /// `Err` once the deadline has passed: every experiment checks this between
    /// measurements so one job never holds the shared GPU past its limit.
    pub fn check(&self) -> Result<(), PastDeadline> {
        if Instant::now() > self.at {
            Err(PastDeadline(self.message))
        } else {
            Ok(())
        }
    }
}

/// Something that times an interval in milliseconds: the host clock, or CUDA events.
pub trait Clock {
    /// What reading the clock can fail with.
    type Error;
    /// Marks the start of the interval.
    fn start(&mut self) -> Result<(), Self::Error>;
    /// Milliseconds since [`Clock::start`], once the timed work is complete.
    fn stop(&mut self) -> Result<f64, Self::Error>;
}

/// The host's monotonic clock. For work that runs on the calling thread.
#[derive(Debug, Default)]
pub struct HostClock {
    started: Option<Instant>,
}

impl Clock for HostClock {
    type Error = Infallible;

    fn start(&mut self) -> Result<(), Infallible> {
        self.started = Some(Instant::now());
        Ok(())
    }

    fn stop(&mut self) -> Result<f64, Infallible> {
        Ok(self
            .started
            .map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3))
    }
}

/// How many untimed warm-ups and timed repetitions to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reps {
    /// Untimed runs first (caches, clocks and lazy initialisation settle).
    pub warmups: usize,
    /// Timed runs; the summary is over these.
    pub timed: usize,
}

/// An unsettled point is sampled up to this many times `Reps::timed`.
pub const MAX_TIMED_FACTOR: usize = 4;
/// Past `Reps::timed`, a point gets more samples only while its timed loop has run for
/// less than this: the extra repetitions stay a bounded share of any job on the GPU.
pub const POINT_BUDGET: Duration = Duration::from_millis(150);

/// Runs `work` `reps.warmups` times untimed, then `reps.timed` times each timed by
/// `clock`, checking `deadline` before each timed run, and more (up to
/// [`MAX_TIMED_FACTOR`] times as many, within [`POINT_BUDGET`]) until the samples'
/// IQR settles; returns the milliseconds' median and spread. `work` runs between `start` and `stop`, so what it queues is
/// what is timed.
pub fn repeat<C, E>(
    clock: &mut C,
    reps: Reps,
    deadline: &Deadline,
    mut work: impl FnMut() -> Result<(), E>,
) -> Result<Summary, E>
where
    C: Clock,
    E: From<C::Error> + From<PastDeadline>,
{
    for _ in 0..reps.warmups {
        work()?;
    }
    let minimum = reps.timed.max(1);
    let mut samples = Vec::with_capacity(minimum);
    let started = Instant::now();
    loop {
        // Past the minimum, go on only while the point is unsettled, under its sample
        // cap and inside its time budget: the job deadline still bounds every sample.
        if samples.len() >= minimum
            && (samples.len() >= minimum * MAX_TIMED_FACTOR
                || started.elapsed() >= POINT_BUDGET
                || spread::samples_settled(&samples))
        {
            break;
        }
        deadline.check()?;
        clock.start()?;
        work()?;
        samples.push(clock.stop()?);
    }
    Ok(summarize(&samples).unwrap_or(Summary::NONE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.samples), (2.0, 1.0, 3.0, 3));
        assert_eq!(summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        let q = summarize(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!((q.q1, q.q3, q.outliers, q.stable), (2.0, 4.0, 1, false));
        assert!(summarize(&[5.0, 5.1, 5.0, 4.9]).unwrap().stable);
        let rate = summarize(&[1.0, 2.0, 4.0]).unwrap().per_second(8.0);
        assert_eq!((rate.median, rate.min, rate.max), (4000.0, 2000.0, 8000.0));
        assert_eq!((rate.q1, rate.q3), (8.0 / (3.0 / 1e3), 8.0 / (1.5 / 1e3)));
    }

    #[test]
    fn repeat_warms_up_then_times_each_run() {
        let mut runs = 0;
        let summary = repeat::<_, PastDeadline>(
            &mut HostClock::default(),
            Reps {
                warmups: 2,
                timed: 3,
            },
            &Deadline::after(Duration::from_secs(60)),
            || {
                runs += 1;
                std::thread::sleep(Duration::from_millis(2));
                Ok(())
            },
        )
        .unwrap();
        assert!(runs >= 5 && summary.samples >= 3, "{runs} {summary:?}");
        assert!(summary.samples <= 3 * MAX_TIMED_FACTOR);
        assert!(
            summary.min >= 1.5 && summary.median <= summary.max,
            "{summary:?}"
        );
    }

    #[test]
    fn an_unsettled_point_gets_more_samples_within_its_budget() {
        // Alternating 1 ms and 3 ms never settles: the loop goes past the minimum and
        // stops at the cap or the budget, never beyond.
        let mut clock = Scripted(0);
        let noisy = repeat::<_, PastDeadline>(
            &mut clock,
            Reps {
                warmups: 0,
                timed: 3,
            },
            &Deadline::after(Duration::from_secs(60)),
            || Ok(()),
        )
        .unwrap();
        assert_eq!(noisy.samples, 3 * MAX_TIMED_FACTOR, "{noisy:?}");
        assert!(!noisy.stable);
    }

    /// A clock whose readings alternate 1 ms, 3 ms.
    struct Scripted(usize);
    impl Clock for Scripted {
        type Error = Infallible;
        fn start(&mut self) -> Result<(), Infallible> {
            Ok(())
        }
        fn stop(&mut self) -> Result<f64, Infallible> {
            self.0 += 1;
            Ok(if self.0.is_multiple_of(2) { 3.0 } else { 1.0 })
        }
    }

    #[test]
    fn a_past_deadline_stops_the_loop_with_its_message() {
        let past = Deadline::after(Duration::ZERO).saying(TRY_FEWER_STEPS);
        std::thread::sleep(Duration::from_millis(2));
        let err = repeat::<_, PastDeadline>(
            &mut HostClock::default(),
            Reps {
                warmups: 0,
                timed: 2,
            },
            &past,
            || Ok(()),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), TRY_FEWER_STEPS);
    }
}
