//! GPU memory as the driver and NVML see it (lesson 7), and raw device blocks for the
//! allocator playground. [`DeviceMemory`] is cheap to clone and may be used from any
//! thread: its blocks are allocated and freed synchronously (`cuMemAlloc`/`cuMemFree`),
//! on no stream, so nothing the playground does is queued inside an experiment's timed
//! window, and freed memory really returns to the driver.

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdeviceptr;

use super::error::{DriverContext, GpuError};
use super::nvml::{GpuProcess, NvmlDevice};

/// What NVML and the driver report about device memory right now.
#[derive(Debug, Clone, Default)]
pub struct DeviceMemoryReport {
    /// NVML: device memory in use (all processes, plus driver reservations).
    pub nvml_used_bytes: Option<u64>,
    /// NVML: device memory in total.
    pub nvml_total_bytes: Option<u64>,
    /// Driver (`cuMemGetInfo`): free device memory.
    pub driver_free_bytes: Option<u64>,
    /// Driver: total device memory.
    pub driver_total_bytes: Option<u64>,
    /// Processes using the GPU (NVML).
    pub processes: Vec<GpuProcess>,
}

/// A block of device memory from `cuMemAlloc`, handed straight back to the driver
/// with `cuMemFree` when dropped — no stream-ordered pool keeps it, so the driver's
/// free-memory figure moves exactly as the playground's `empty_cache` says it does.
pub struct DeviceBlock {
    ctx: Arc<CudaContext>,
    address: CUdeviceptr,
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `address` came from cuMemAlloc in this context and is freed once.
            // After a context reset the free fails harmlessly (the memory went with it).
            let _ = unsafe { cudarc::driver::result::free_sync(self.address) };
        }
    }
}

// SAFETY: a device address is a plain number; the driver allows freeing it from any
// thread once the context is bound there, which `drop` does.
unsafe impl Send for DeviceBlock {}

/// Device memory on the GPU's primary context, for the allocator playground.
#[derive(Clone)]
pub struct DeviceMemory {
    ctx: Arc<CudaContext>,
    nvml: Option<NvmlDevice>,
}

impl DeviceMemory {
    pub(super) fn new(ctx: Arc<CudaContext>, nvml: Option<NvmlDevice>) -> Self {
        Self { ctx, nvml }
    }

    /// `bytes` of zeroed device memory, allocated synchronously (`cuMemAlloc`, not the
    /// stream-ordered pool) and touching no experiment's stream.
    pub fn allocate(&self, bytes: usize) -> Result<DeviceBlock, GpuError> {
        let bytes = bytes.max(1);
        self.ctx.bind_to_thread().what("cannot bind the context")?;
        // SAFETY: the context is current on this thread (bound above); the block owns
        // the returned address from here on and frees it once, in `drop`.
        let address = unsafe { cudarc::driver::result::malloc_sync(bytes) }
            .what("the driver refused the allocation")?;
        let block = DeviceBlock {
            ctx: Arc::clone(&self.ctx),
            address,
        };
        // SAFETY: `address` points at `bytes` bytes of device memory just allocated.
        unsafe { cudarc::driver::result::memset_d8_sync(address, 0, bytes) }
            .what("zeroing the allocation failed")?;
        Ok(block)
    }

    /// Bytes in use on the device per the driver (all processes, contexts included).
    pub fn used_bytes(&self) -> Option<u64> {
        self.ctx
            .mem_get_info()
            .ok()
            .map(|(free, total)| (total - free) as u64)
    }

    /// The driver's and NVML's view now. NVML calls can block for milliseconds: call
    /// this off the async threads.
    pub fn report(&self) -> DeviceMemoryReport {
        let mut report = DeviceMemoryReport::default();
        if let Ok((free, total)) = self.ctx.mem_get_info() {
            report.driver_free_bytes = Some(free as u64);
            report.driver_total_bytes = Some(total as u64);
        }
        if let Some(nvml) = &self.nvml {
            if let Some((used, total)) = nvml.memory() {
                report.nvml_used_bytes = Some(used);
                report.nvml_total_bytes = Some(total);
            }
            report.processes = nvml.processes().unwrap_or_default();
        }
        report
    }
}

/// How many of the GPU's processes (`pids`, host PIDs from NVML) are not this server
/// (`own`, its PID as it sees it). Inside a container the server's own PID is from
/// another PID namespace and never matches; but a server with an open context is
/// always one of NVML's processes, so then one of them is discounted.
pub fn others(pids: &[u32], own: u32) -> usize {
    if pids.contains(&own) {
        pids.len() - 1
    } else {
        pids.len().saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_never_counted_as_another_process() {
        assert_eq!(others(&[10, 11, 12], 11), 2, "same PID namespace");
        assert_eq!(
            others(&[4242, 5151], 7),
            1,
            "in a container: one of them is us"
        );
        assert_eq!(others(&[4242], 7), 0);
        assert_eq!(others(&[], 7), 0);
    }
}
