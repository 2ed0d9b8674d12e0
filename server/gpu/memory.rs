//! GPU memory as the driver and NVML see it (lesson 7), and raw device blocks for the
//! allocator playground. [`DeviceMemory`] is cheap to clone and may be used from any
//! thread: allocations and the driver's free/total go through the context, and the
//! playground's blocks are freed on the stream they were allocated on.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice};
use serde::Serialize;

use super::error::{DriverContext, GpuError};
use super::loader::guarded;

/// One process holding GPU memory.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GpuProcess {
    /// Host PID (inside a container NVML shows host PIDs).
    pub pid: u32,
    /// Bytes it holds, when NVML can tell.
    pub used_bytes: Option<u64>,
}

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

/// A block of device memory, released when dropped.
pub struct DeviceBlock {
    _memory: CudaSlice<u8>,
}

/// Device memory on GPU 0's primary context.
#[derive(Clone)]
pub struct DeviceMemory {
    ctx: Arc<CudaContext>,
}

impl DeviceMemory {
    pub(super) fn new(ctx: Arc<CudaContext>) -> Self {
        Self { ctx }
    }

    /// `bytes` of zeroed device memory.
    pub fn allocate(&self, bytes: usize) -> Result<DeviceBlock, GpuError> {
        let memory = self
            .ctx
            .default_stream()
            .alloc_zeros::<u8>(bytes.max(1))
            .what("the driver refused the allocation")?;
        Ok(DeviceBlock { _memory: memory })
    }

    /// Bytes in use on the device per the driver (all processes, contexts included).
    pub fn used_bytes(&self) -> Option<u64> {
        self.ctx
            .mem_get_info()
            .ok()
            .map(|(free, total)| (total - free) as u64)
    }

    /// The driver's and NVML's view now.
    pub fn report(&self) -> DeviceMemoryReport {
        let mut report = DeviceMemoryReport::default();
        if let Ok((free, total)) = self.ctx.mem_get_info() {
            report.driver_free_bytes = Some(free as u64);
            report.driver_total_bytes = Some(total as u64);
        }
        if let Ok(Ok(nvml)) = guarded(nvml_wrapper::Nvml::init)
            && let Ok(device) = nvml.device_by_index(0)
        {
            if let Ok(info) = device.memory_info() {
                report.nvml_used_bytes = Some(info.used);
                report.nvml_total_bytes = Some(info.total);
            }
            if let Ok(procs) = device.running_compute_processes() {
                report.processes = procs
                    .iter()
                    .map(|p| GpuProcess {
                        pid: p.pid,
                        used_bytes: match p.used_gpu_memory {
                            nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => Some(b),
                            nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => None,
                        },
                    })
                    .collect();
            }
        }
        report
    }
}
