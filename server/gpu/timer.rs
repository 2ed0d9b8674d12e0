//! GPU clocks for `measure::repeat`, the one timing loop: [`EventClock`] times work
//! queued on a stream with a pair of CUDA events (the GPU's own timestamps), and
//! [`SyncedHostClock`] reads the host clock only after the stream has drained (what a
//! Python timer around `torch.cuda.synchronize()` measures). [`Marks`] records events
//! along one or several streams and reads every mark against the first, for timelines.
//! Events are created with `CU_EVENT_DEFAULT` (timing enabled), as nvbandwidth does.

use std::time::Instant;

use cudarc::driver::CudaEvent;
use cudarc::driver::sys::CUevent_flags;

use super::device::Gpu;
use super::error::{DriverContext, GpuError};
use super::stream::Stream;
use crate::measure::Clock;

fn timing_event(stream: &Stream) -> Result<CudaEvent, GpuError> {
    stream
        .raw()
        .context()
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .what("event creation failed")
}

/// Times the work queued on one stream between `start` and `stop` with CUDA events.
pub struct EventClock {
    stream: Stream,
    start: CudaEvent,
    end: CudaEvent,
}

impl Clock for EventClock {
    type Error = GpuError;

    fn start(&mut self) -> Result<(), GpuError> {
        self.start
            .record(self.stream.raw())
            .what("event record failed")
    }

    fn stop(&mut self) -> Result<f64, GpuError> {
        self.end
            .record(self.stream.raw())
            .what("event record failed")?;
        Ok(f64::from(
            self.start
                .elapsed_ms(&self.end)
                .what("event timing failed")?,
        ))
    }
}

/// The host clock, stopped after the stream has finished everything queued on it.
pub struct SyncedHostClock {
    stream: Stream,
    started: Instant,
}

impl Clock for SyncedHostClock {
    type Error = GpuError;

    fn start(&mut self) -> Result<(), GpuError> {
        self.started = Instant::now();
        Ok(())
    }

    fn stop(&mut self) -> Result<f64, GpuError> {
        self.stream.sync()?;
        Ok(self.started.elapsed().as_secs_f64() * 1e3)
    }
}

/// Timestamps recorded along streams, read against the first one.
pub struct Marks {
    events: Vec<CudaEvent>,
}

impl Marks {
    /// Records a mark at this point of `stream`'s queue; returns its index.
    pub fn record(&mut self, stream: &Stream) -> Result<usize, GpuError> {
        let event = timing_event(stream)?;
        event.record(stream.raw()).what("event record failed")?;
        self.events.push(event);
        Ok(self.events.len() - 1)
    }

    /// Milliseconds from the first mark to each mark (waits for all of them).
    pub fn offsets_ms(&self) -> Result<Vec<f64>, GpuError> {
        let Some(origin) = self.events.first() else {
            return Ok(Vec::new());
        };
        self.events
            .iter()
            .map(|e| {
                origin
                    .elapsed_ms(e)
                    .map(f64::from)
                    .what("event timing failed")
            })
            .collect()
    }

    /// Milliseconds from the first mark to mark `index` (waits for it).
    pub fn offset_ms(&self, index: usize) -> Result<f64, GpuError> {
        match (self.events.first(), self.events.get(index)) {
            (Some(origin), Some(mark)) => origin
                .elapsed_ms(mark)
                .map(f64::from)
                .what("event timing failed"),
            _ => Err(GpuError::Shape(format!(
                "mark {index} of {} recorded",
                self.events.len()
            ))),
        }
    }

    /// Milliseconds between consecutive marks.
    pub fn intervals_ms(&self) -> Result<Vec<f64>, GpuError> {
        let offsets = self.offsets_ms()?;
        Ok(offsets.windows(2).map(|w| w[1] - w[0]).collect())
    }
}

impl Gpu {
    /// A CUDA-event clock on the main stream.
    pub fn event_clock(&self) -> Result<EventClock, GpuError> {
        self.clock_on(self.stream())
    }

    /// A CUDA-event clock on `stream`.
    pub fn clock_on(&self, stream: &Stream) -> Result<EventClock, GpuError> {
        Ok(EventClock {
            stream: stream.clone(),
            start: timing_event(stream)?,
            end: timing_event(stream)?,
        })
    }

    /// The host clock, read after the main stream drains.
    pub fn synced_host_clock(&self) -> SyncedHostClock {
        SyncedHostClock {
            stream: self.stream().clone(),
            started: Instant::now(),
        }
    }

    /// An empty set of marks.
    pub fn marks(&self) -> Marks {
        Marks { events: Vec::new() }
    }
}
