//! A clock that remembers each interval it timed: [`Recorded`] wraps any [`Clock`] (the
//! host clock, CUDA events) and keeps, per timed run, when it began on the host's
//! monotonic clock and how long the wrapped clock said it took. A result's summary is
//! made from exactly these durations, so a trace drawn from them shows the samples the
//! figures come from, not a second run.
//!
//! Placement is on the host clock: a run begins when `start` is called. With CUDA events
//! the previous run's `stop` has waited for the stream, so the stream is idle when the
//! next run's start event is recorded and the two clocks agree to within a launch.

use std::time::Instant;

use super::Clock;

/// One timed run: where it began (ms after the recorder's origin, host clock) and how
/// long the wrapped clock measured it (ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Start, ms after the origin.
    pub start_ms: f64,
    /// Measured duration, ms.
    pub ms: f64,
}

/// A clock that times with `C` and records every interval.
#[derive(Debug)]
pub struct Recorded<'a, C> {
    clock: &'a mut C,
    origin: Instant,
    begun_ms: f64,
    intervals: Vec<Interval>,
}

impl<'a, C: Clock> Recorded<'a, C> {
    /// Records `clock`'s intervals, placed in ms after `origin`.
    pub fn new(clock: &'a mut C, origin: Instant) -> Self {
        Self {
            clock,
            origin,
            begun_ms: 0.0,
            intervals: Vec::new(),
        }
    }

    /// The intervals recorded since the last call, oldest first.
    pub fn take(&mut self) -> Vec<Interval> {
        std::mem::take(&mut self.intervals)
    }
}

impl<C: Clock> Clock for Recorded<'_, C> {
    type Error = C::Error;

    fn start(&mut self) -> Result<(), C::Error> {
        self.begun_ms = self.origin.elapsed().as_secs_f64() * 1e3;
        self.clock.start()
    }

    fn stop(&mut self) -> Result<f64, C::Error> {
        let ms = self.clock.stop()?;
        self.intervals.push(Interval {
            start_ms: self.begun_ms,
            ms,
        });
        Ok(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Deadline, HostClock, Reps, repeat};
    use std::time::Duration;

    #[test]
    fn every_timed_run_is_recorded_in_order_with_the_duration_the_summary_used() {
        let origin = Instant::now();
        let mut host = HostClock::default();
        let mut clock = Recorded::new(&mut host, origin);
        let reps = Reps {
            warmups: 2,
            timed: 3,
        };
        let deadline = Deadline::after(Duration::from_secs(60));
        let summary =
            repeat::<_, crate::measure::PastDeadline>(&mut clock, reps, &deadline, || {
                std::thread::sleep(Duration::from_millis(1));
                Ok(())
            })
            .unwrap();
        let runs = clock.take();
        assert_eq!(runs.len(), summary.samples, "warm-ups are not recorded");
        let mut ms: Vec<f64> = runs.iter().map(|r| r.ms).collect();
        ms.sort_by(f64::total_cmp);
        assert_eq!(ms[0], summary.min);
        assert_eq!(ms[ms.len() - 1], summary.max);
        for pair in runs.windows(2) {
            assert!(pair[1].start_ms >= pair[0].start_ms + pair[0].ms);
        }
        assert!(runs[0].start_ms >= 2.0, "after two 1 ms warm-ups");
        assert!(clock.take().is_empty(), "take drains");
    }
}
