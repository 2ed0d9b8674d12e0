//! How GPU Lab measures, in one place: repeated samples summarised as a median with
//! its spread, a per-job [`Deadline`], and [`repeat`], the one timing loop every
//! experiment uses (warm-ups, then timed repetitions, checking the deadline before each)
//! over any [`Clock`]: the host clock here, CUDA events in `gpu::timer`.
//!
//! It depends on nothing else in the crate, so the CPU reference, the GPU layer and the
//! experiments can all use it.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use serde::Serialize;

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
}

impl Summary {
    /// For a summary of milliseconds per run: `amount` per second, as a summary (the
    /// fastest run gives the largest rate). Exact for the median with an odd count.
    pub fn per_second(self, amount: f64) -> Summary {
        let rate = |ms: f64| amount / (ms.max(1e-9) / 1e3);
        Summary {
            median: rate(self.median),
            min: rate(self.max),
            max: rate(self.min),
            samples: self.samples,
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
    Some(Summary {
        median,
        min: sorted[0],
        max: sorted[n - 1],
        samples: n,
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

/// Runs `work` `reps.warmups` times untimed, then `reps.timed` times each timed by
/// `clock`, checking `deadline` before each timed run; returns the milliseconds'
/// median and spread. `work` runs between `start` and `stop`, so what it queues is
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
    let mut samples = Vec::with_capacity(reps.timed);
    for _ in 0..reps.timed.max(1) {
        deadline.check()?;
        clock.start()?;
        work()?;
        samples.push(clock.stop()?);
    }
    Ok(summarize(&samples).unwrap_or(Summary {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
        samples: 0,
    }))
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
        let rate = summarize(&[1.0, 2.0, 4.0]).unwrap().per_second(8.0);
        assert_eq!((rate.median, rate.min, rate.max), (4000.0, 2000.0, 8000.0));
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
        assert_eq!((runs, summary.samples), (5, 3));
        assert!(
            summary.min >= 1.5 && summary.median <= summary.max,
            "{summary:?}"
        );
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
