//! A CPU stand-in for a GPU's copy queue, asynchronous the way the driver is: a copy to
//! or from pinned memory is queued and runs at the next sync — the latest moment a
//! driver may run it — reading and writing host memory then, not when it was queued; a
//! pageable host→device copy reads its source at the call (into staging, as the driver
//! does before it returns) and lands on the device at the sync; a pageable
//! device→host copy runs everything queued, then itself, before it returns.
//! Device and pinned buffers are shared with the queue (`Arc<Mutex<…>>`), so a queued
//! copy and the host touch them in turn, never at once.
//!
//! Deterministic by design: with every copy at its latest, a host write to a buffer a
//! copy still has to read is always seen by that copy, so an order that is a race on a
//! GPU is a wrong result here every time (`transfer::round_trips` runs on it in the CPU
//! self-test; its test shows run 1's order failing as it did on an H200).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};

use super::copies::{CopyQueue, InFlight, PinnedBytes};
use super::error::GpuError;

/// Bytes the queue and the host share.
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    fn zeros(len: usize) -> Self {
        Self(Arc::new(Mutex::new(vec![0; len])))
    }

    fn lock(&self) -> Result<MutexGuard<'_, Vec<u8>>, GpuError> {
        self.0
            .lock()
            .map_err(|_| GpuError::Unsupported("a stand-in buffer was poisoned".into()))
    }
}

impl PinnedBytes for Shared {
    fn write(&mut self, f: impl FnOnce(&mut [u8])) -> Result<(), GpuError> {
        f(&mut self.lock()?);
        Ok(())
    }

    fn read(&self) -> Result<Vec<u8>, GpuError> {
        Ok(self.lock()?.clone())
    }
}

type Work = Box<dyn FnOnce() -> Result<(), GpuError>>;

/// The stand-in's one stream: work queued in order, run at the next sync.
#[derive(Default)]
pub struct StandIn {
    queued: RefCell<Vec<Work>>,
}

impl StandIn {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn queue(&self, work: impl FnOnce() -> Result<(), GpuError> + 'static) {
        self.queued.borrow_mut().push(Box::new(work));
    }

    /// Queues a copy from `src` to `dst` that reads `src` when it runs, not now.
    fn queue_copy(&self, src: &Shared, dst: &Shared) {
        let (src, dst) = (src.clone(), dst.clone());
        self.queue(move || {
            let bytes = src.lock()?.clone();
            copy_prefix(&mut dst.lock()?, &bytes);
            Ok(())
        });
    }
}

/// Copies `from[..n]` into `to[..n]`, `n` the shorter of the two.
fn copy_prefix(to: &mut [u8], from: &[u8]) {
    let n = to.len().min(from.len());
    to[..n].copy_from_slice(&from[..n]);
}

impl CopyQueue for StandIn {
    type Device = Shared;
    type Pinned = Shared;

    fn device(&self, len: usize) -> Result<Shared, GpuError> {
        Ok(Shared::zeros(len))
    }

    fn pinned(&self, len: usize) -> Result<Shared, GpuError> {
        Ok(Shared::zeros(len))
    }

    fn pinned_to_device<'a>(
        &'a self,
        src: &'a Shared,
        dst: &mut Shared,
    ) -> Result<InFlight<'a, Self>, GpuError> {
        self.queue_copy(src, dst);
        Ok(InFlight::queued(self))
    }

    fn device_to_pinned<'a>(
        &'a self,
        src: &Shared,
        dst: &'a mut Shared,
    ) -> Result<InFlight<'a, Self>, GpuError> {
        self.queue_copy(src, dst);
        Ok(InFlight::queued(self))
    }

    fn pageable_to_device(&self, src: &[u8], dst: &mut Shared) -> Result<(), GpuError> {
        let staged = src.to_vec();
        let dst = dst.clone();
        self.queue(move || {
            copy_prefix(&mut dst.lock()?, &staged);
            Ok(())
        });
        Ok(())
    }

    fn device_to_pageable(&self, src: &Shared, dst: &mut [u8]) -> Result<(), GpuError> {
        self.sync()?;
        copy_prefix(dst, &src.lock()?);
        Ok(())
    }

    fn sync(&self) -> Result<(), GpuError> {
        let work = std::mem::take(&mut *self.queued.borrow_mut());
        work.into_iter().try_for_each(|w| w())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_copies_run_at_the_sync_and_read_the_host_buffer_then() {
        let q = StandIn::new();
        let (mut device, mut pinned) = (q.device(4).unwrap(), q.pinned(4).unwrap());
        pinned.write(|b| b.copy_from_slice(&[1, 2, 3, 4])).unwrap();
        let copy = q.pinned_to_device(&pinned, &mut device).unwrap();
        assert_eq!(
            device.read().unwrap(),
            vec![0; 4],
            "nothing has run before the sync"
        );
        copy.wait().unwrap();
        assert_eq!(device.read().unwrap(), vec![1, 2, 3, 4]);
        // A guard dropped unwaited syncs too.
        pinned.write(|b| b.fill(9)).unwrap();
        drop(q.pinned_to_device(&pinned, &mut device).unwrap());
        assert_eq!(device.read().unwrap(), vec![9; 4]);
    }

    #[test]
    fn pageable_copies_read_their_source_at_the_call_and_return_results_synchronously() {
        let q = StandIn::new();
        let mut device = q.device(3).unwrap();
        let mut host = vec![5u8, 6, 7];
        q.pageable_to_device(&host, &mut device).unwrap();
        host.fill(0); // staged already: the copy keeps 5, 6, 7
        let mut back = vec![0u8; 3];
        q.device_to_pageable(&device, &mut back).unwrap();
        assert_eq!(back, vec![5, 6, 7]);
    }
}
