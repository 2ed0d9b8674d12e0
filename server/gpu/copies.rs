//! Host↔device copies of bytes as the driver orders them, behind one trait,
//! [`CopyQueue`], with two implementations: the driver's [`Stream`], and
//! [`super::standin::StandIn`], a CPU stand-in that runs queued copies as late as a
//! driver may. The start-up self-test's round trip (`transfer::round_trips`) is written
//! once against the trait, so CI runs the very code a GPU runs, with the asynchrony that
//! broke it on an H200 (run 1, 2026-11-28: the host overwrote a pinned buffer an
//! asynchronous copy was still to read).
//!
//! A copy to or from pinned memory returns an [`InFlight`] that keeps the host buffer
//! borrowed until the copy is known complete: [`InFlight::wait`] syncs, and dropping
//! it syncs too. So the order run 1 had — queue a copy from a pinned buffer, overwrite
//! the buffer, then sync — does not compile:
//!
//! ```compile_fail,E0502
//! use gpulab::gpu::copies::{CopyQueue, PinnedBytes};
//! use gpulab::gpu::standin::StandIn;
//! # fn main() -> Result<(), gpulab::gpu::GpuError> {
//! let queue = StandIn::new();
//! let mut device = queue.device(16)?;
//! let mut pinned = queue.pinned(16)?;
//! let copy = queue.pinned_to_device(&pinned, &mut device)?;
//! pinned.write(|bytes| bytes.fill(0))?; // the host writes the source of a queued copy
//! copy.wait()?;
//! # Ok(())
//! # }
//! ```
//!
//! and the right order, waiting before the host writes, does:
//!
//! ```
//! use gpulab::gpu::copies::{CopyQueue, PinnedBytes};
//! use gpulab::gpu::standin::StandIn;
//! # fn main() -> Result<(), gpulab::gpu::GpuError> {
//! let queue = StandIn::new();
//! let mut device = queue.device(16)?;
//! let mut pinned = queue.pinned(16)?;
//! pinned.write(|bytes| bytes.fill(7))?;
//! queue.pinned_to_device(&pinned, &mut device)?.wait()?;
//! pinned.write(|bytes| bytes.fill(0))?;
//! queue.device_to_pinned(&device, &mut pinned)?.wait()?;
//! assert_eq!(pinned.read()?, vec![7; 16]);
//! # Ok(())
//! # }
//! ```
//!
//! What types cannot show — copies on two streams, events, kernels reading a buffer a
//! copy is still filling — the stand-in's deferred queue shows for what it runs (bytes
//! copied at the latest moment the driver allows). What neither shows: timing, the
//! copy engines' real overlap, and a `std::mem::forget` of an [`InFlight`] (the one way
//! safe Rust can drop the guard without waiting; the stand-in then shows the race).

use super::device::{Gpu, PinnedBuffer};
use super::error::GpuError;
use super::stream::{DeviceBuffer, Stream};

/// A page-locked host buffer of bytes.
pub trait PinnedBytes {
    /// Lets `f` write the buffer (nothing may be in flight: an [`InFlight`] borrows it).
    fn write(&mut self, f: impl FnOnce(&mut [u8])) -> Result<(), GpuError>;
    /// A copy of the buffer's bytes.
    fn read(&self) -> Result<Vec<u8>, GpuError>;
}

/// A queue of host↔device copies in stream order.
pub trait CopyQueue {
    /// A device buffer of bytes.
    type Device;
    /// A page-locked host buffer of bytes.
    type Pinned: PinnedBytes;

    /// `len` zeroed device bytes.
    fn device(&self, len: usize) -> Result<Self::Device, GpuError>;
    /// `len` zeroed page-locked bytes.
    fn pinned(&self, len: usize) -> Result<Self::Pinned, GpuError>;
    /// Queues a copy of all of `src` to the start of `dst`; `src` stays borrowed until
    /// the copy is known complete.
    fn pinned_to_device<'a>(
        &'a self,
        src: &'a Self::Pinned,
        dst: &mut Self::Device,
    ) -> Result<InFlight<'a, Self>, GpuError>;
    /// Queues a copy of the start of `src` into all of `dst`; `dst` stays borrowed
    /// until the copy is known complete.
    fn device_to_pinned<'a>(
        &'a self,
        src: &Self::Device,
        dst: &'a mut Self::Pinned,
    ) -> Result<InFlight<'a, Self>, GpuError>;
    /// Copies pageable `src` to the start of `dst`: returns once `src` has been read
    /// (into the driver's staging memory), the copy to the device may still be queued.
    fn pageable_to_device(&self, src: &[u8], dst: &mut Self::Device) -> Result<(), GpuError>;
    /// Copies the start of `src` into pageable `dst`: returns once the copy is done
    /// (after everything queued before it).
    fn device_to_pageable(&self, src: &Self::Device, dst: &mut [u8]) -> Result<(), GpuError>;
    /// Waits until everything queued has run.
    fn sync(&self) -> Result<(), GpuError>;
}

/// A queued copy to or from a pinned buffer, holding the buffer until it is known
/// complete. Waiting syncs the queue; so does dropping it unwaited.
#[must_use = "the copy may still be running: wait for it before touching its host buffer"]
pub struct InFlight<'a, Q: CopyQueue + ?Sized> {
    queue: &'a Q,
    waited: bool,
}

impl<'a, Q: CopyQueue + ?Sized> InFlight<'a, Q> {
    /// A copy just queued on `queue`.
    pub fn queued(queue: &'a Q) -> Self {
        Self {
            queue,
            waited: false,
        }
    }

    /// Waits for the copy (and everything queued before it), releasing its buffer.
    pub fn wait(mut self) -> Result<(), GpuError> {
        self.waited = true;
        self.queue.sync()
    }
}

impl<Q: CopyQueue + ?Sized> Drop for InFlight<'_, Q> {
    fn drop(&mut self) {
        if !self.waited {
            // A sync failure here would surface at the caller's next call on the queue.
            let _ = self.queue.sync();
        }
    }
}

impl PinnedBytes for PinnedBuffer<u8> {
    fn write(&mut self, f: impl FnOnce(&mut [u8])) -> Result<(), GpuError> {
        f(self.as_mut_slice()?);
        Ok(())
    }

    fn read(&self) -> Result<Vec<u8>, GpuError> {
        Ok(self.as_slice()?.to_vec())
    }
}

/// The driver's stream with the pinned buffers of `gpu`.
pub struct DriverQueue<'g> {
    gpu: &'g Gpu,
    stream: Stream,
}

impl<'g> DriverQueue<'g> {
    /// Copies on `gpu`'s main stream.
    pub fn on(gpu: &'g Gpu) -> Self {
        Self {
            gpu,
            stream: gpu.stream().clone(),
        }
    }
}

impl CopyQueue for DriverQueue<'_> {
    type Device = DeviceBuffer<u8>;
    type Pinned = PinnedBuffer<u8>;

    fn device(&self, len: usize) -> Result<Self::Device, GpuError> {
        self.stream.zeros(len)
    }

    fn pinned(&self, len: usize) -> Result<Self::Pinned, GpuError> {
        self.gpu.pinned(len)
    }

    fn pinned_to_device<'a>(
        &'a self,
        src: &'a Self::Pinned,
        dst: &mut Self::Device,
    ) -> Result<InFlight<'a, Self>, GpuError> {
        self.stream.copy_to_device(src.as_slice()?, dst)?;
        Ok(InFlight::queued(self))
    }

    fn device_to_pinned<'a>(
        &'a self,
        src: &Self::Device,
        dst: &'a mut Self::Pinned,
    ) -> Result<InFlight<'a, Self>, GpuError> {
        self.stream.copy_to_host(src, dst.as_mut_slice()?)?;
        Ok(InFlight::queued(self))
    }

    fn pageable_to_device(&self, src: &[u8], dst: &mut Self::Device) -> Result<(), GpuError> {
        self.stream.copy_to_device(src, dst)
    }

    fn device_to_pageable(&self, src: &Self::Device, dst: &mut [u8]) -> Result<(), GpuError> {
        // Device→host to pageable memory returns once the copy is done (the driver's
        // API synchronisation rules); the sync makes that explicit here.
        self.stream.copy_to_host(src, dst)?;
        self.stream.sync()
    }

    fn sync(&self) -> Result<(), GpuError> {
        self.stream.sync()
    }
}
