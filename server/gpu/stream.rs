//! Device buffers and streams: [`DeviceBuffer`] (cudarc's `CudaSlice`), the
//! [`Element`] types GPU Lab keeps in them, and [`Stream`], a queue of GPU work with its
//! copies, allocations, waits, forks and joins. The [`super::device::Gpu`] handle owns
//! the main stream; GEMMs ([`super::blas`]) and kernels ([`super::launch`]) queue work
//! on streams.

use std::sync::Arc;

use super::error::{DriverContext, GpuError};
use cudarc::driver::{CudaStream, DeviceRepr, ValidAsZeroBits};

/// A buffer of `T` in device memory (cudarc's `CudaSlice`).
pub use cudarc::driver::CudaSlice as DeviceBuffer;

/// Element types GPU Lab keeps in device buffers.
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Unpin + Send + 'static {}
impl Element for f32 {}
impl Element for f64 {}
impl Element for half::f16 {}
impl Element for half::bf16 {}
impl Element for i32 {}
impl Element for u8 {}

/// A queue of GPU work. Work on one stream runs in order; work on two streams may
/// overlap. Everything here only queues work, except where a method says it waits.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<CudaStream>,
}

impl Stream {
    /// Wraps a cudarc stream.
    pub(super) fn new(inner: Arc<CudaStream>) -> Self {
        Self { inner }
    }

    pub(super) fn raw(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// A new device buffer holding a copy of `host`.
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<DeviceBuffer<T>, GpuError> {
        self.inner
            .clone_htod(host)
            .what("copying to a new device buffer failed")
    }

    /// A new device buffer of `len` zeros.
    pub fn zeros<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        self.inner
            .alloc_zeros(len.max(1))
            .what("device allocation failed")
    }

    /// The whole buffer, copied to the host (waits for the copy).
    pub fn download<T: Element>(&self, buffer: &DeviceBuffer<T>) -> Result<Vec<T>, GpuError> {
        self.inner
            .clone_dtoh(buffer)
            .what("copying to the host failed")
    }

    /// Copies all of `src` into the first `src.len()` elements of `dst`.
    pub fn copy_to_device<T: Element>(
        &self,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        fits(src.len(), dst.len(), "host→device copy")?;
        self.inner
            .memcpy_htod(src, &mut dst.slice_mut(..src.len()))
            .what("host→device copy failed")
    }

    /// Copies all of `src` into `dst` starting at element `at`.
    pub fn copy_to_device_at<T: Element>(
        &self,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<(), GpuError> {
        fits(at.saturating_add(src.len()), dst.len(), "host→device copy")?;
        self.inner
            .memcpy_htod(src, &mut dst.slice_mut(at..at + src.len()))
            .what("host→device copy failed")
    }

    /// Copies the first `dst.len()` elements of `src` into `dst`.
    pub fn copy_to_host<T: Element>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut [T],
    ) -> Result<(), GpuError> {
        fits(dst.len(), src.len(), "device→host copy")?;
        self.inner
            .memcpy_dtoh(&src.slice(..dst.len()), dst)
            .what("device→host copy failed")
    }

    /// Copies the first `dst.len()` elements of `src` into `dst`, both on the device.
    pub fn copy_on_device<T: Element>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        fits(dst.len(), src.len(), "device→device copy")?;
        let n = dst.len();
        self.inner
            .memcpy_dtod(&src.slice(..n), &mut dst.slice_mut(..n))
            .what("device→device copy failed")
    }

    /// Waits until everything queued on this stream has run.
    pub fn sync(&self) -> Result<(), GpuError> {
        self.inner.synchronize().what("synchronising failed")
    }

    /// A new stream whose work starts only after what is queued here now.
    pub fn fork(&self) -> Result<Stream, GpuError> {
        Ok(Stream {
            inner: self.inner.fork().what("creating a stream failed")?,
        })
    }

    /// Makes this stream's later work wait for what is queued on `other` now.
    pub fn join(&self, other: &Stream) -> Result<(), GpuError> {
        self.inner.join(&other.inner).what("joining streams failed")
    }
}

fn fits(needed: usize, available: usize, what: &str) -> Result<(), GpuError> {
    if needed <= available {
        Ok(())
    } else {
        Err(GpuError::Shape(format!(
            "{what} of {needed} elements into a buffer of {available}"
        )))
    }
}
