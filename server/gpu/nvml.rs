//! NVML (the library behind nvidia-smi) for the GPU the CUDA context runs on. NVML's
//! device 0 is not necessarily CUDA's device 0: `CUDA_VISIBLE_DEVICES` renumbers CUDA's
//! devices and NVML ignores it, and on multi-GPU boxes the two orders can differ. So
//! the NVML device is found by the CUDA device's UUID, read with `cuDeviceGetUuid_v2`
//! (the v1 call gives a MIG slice its parent GPU's UUID; v2 gives the slice's own
//! `MIG-…` UUID: CUDA Driver API, Device Management), then by PCI bus id, and it is
//! looked up by that UUID every time. On a MIG slice, memory and processes are the
//! slice's own; clocks and the PCIe link only exist for the whole GPU, so they come from
//! the parent and the card says so. NVML is initialised once per open GPU and shared.
//! [`start`] finds NVML's library by each OS's names ([`Os::nvml_candidates`]: on
//! Windows `nvml.dll` in System32, else in `NVSMI` as older drivers put it).

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::{CUdevice_attribute, CUresult, CUuuid};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::device::UsedGpuMemory;

use super::loader::guarded;
use super::platform::Os;

/// Starts NVML from the first of this OS's candidate files that works, or the error of
/// the first one tried (nvml-wrapper's own default name). Never panics.
pub fn start() -> Result<Nvml, String> {
    let program_files = std::env::var("ProgramFiles").ok();
    let candidates = Os::CURRENT.nvml_candidates(program_files.as_deref());
    let mut first_error = None;
    for candidate in &candidates {
        let attempt = guarded(|| {
            Nvml::builder()
                .lib_path(std::ffi::OsStr::new(candidate))
                .init()
        });
        match attempt {
            Ok(Ok(nvml)) => return Ok(nvml),
            Ok(Err(e)) => first_error.get_or_insert_with(|| format!("{candidate}: {e}")),
            Err(e) => first_error.get_or_insert_with(|| format!("{candidate}: {e}")),
        };
    }
    Err(first_error
        .unwrap_or_else(|| "no NVML on this OS (macOS has no NVIDIA driver)".to_string()))
}

/// One process holding GPU memory.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct GpuProcess {
    /// Host PID (inside a container NVML shows host PIDs).
    pub pid: u32,
    /// Bytes it holds, when NVML can tell.
    pub used_bytes: Option<u64>,
}

/// NVML's handle on the device a CUDA context runs on.
#[derive(Clone)]
pub struct NvmlDevice {
    nvml: Arc<Nvml>,
    /// NVML's UUID of the device (`GPU-…`, or `MIG-…` for a MIG slice).
    uuid: String,
    /// How it was matched: `UUID GPU-…` or `PCI bus 0000:3B:00.0`.
    pub matched_by: String,
}

/// The CUDA device's UUID bytes: `cuDeviceGetUuid_v2` (a MIG slice's own UUID), or
/// cudarc's v1 call when the driver lacks v2 (drivers before CUDA 11.4).
pub fn cuda_uuid(ctx: &Arc<CudaContext>) -> Option<[u8; 16]> {
    let v2 = guarded(|| {
        let mut uuid = CUuuid { bytes: [0; 16] };
        // SAFETY: cuDeviceGetUuid_v2 writes 16 bytes into `uuid`, a live local; the
        // device handle comes from a live context (it needs no current context).
        let status =
            unsafe { cudarc::driver::sys::cuDeviceGetUuid_v2(&raw mut uuid, ctx.cu_device()) };
        (status == CUresult::CUDA_SUCCESS).then_some(uuid)
    })
    .ok()
    .flatten();
    v2.or_else(|| ctx.uuid().ok())
        // c_char is i8 on x86-64 and u8 on Arm Linux: its byte either way.
        .map(|u| u.bytes.map(|b| b.to_ne_bytes()[0]))
}

/// What the card says about where its NVML figures come from: nothing on a whole GPU;
/// on a MIG slice, that clocks and the PCIe link are the parent GPU's.
pub fn mig_note(uuid: &str) -> Option<String> {
    uuid.starts_with("MIG-").then(|| {
        format!(
            "This is MIG slice {uuid}: its memory and processes are the slice's own; the clocks and PCIe link shown are the whole (parent) GPU's."
        )
    })
}

/// The CUDA UUID bytes in NVML's spelling: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid_string(prefix: &str, bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{prefix}-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The PCI bus id in NVML's spelling: `00000000:3B:00.0`.
pub fn pci_bus_id(domain: u32, bus: u32, device: u32) -> String {
    format!("{domain:08X}:{bus:02X}:{device:02X}.0")
}

impl NvmlDevice {
    /// NVML's device for `ctx`'s GPU, or `None` when NVML does not load or no NVML
    /// device has its UUID or PCI address (then no NVML figure is shown rather than
    /// another GPU's).
    pub fn matching(ctx: &Arc<CudaContext>) -> Option<Self> {
        let nvml = Arc::new(start().ok()?);
        let by_uuid = cuda_uuid(ctx)
            .into_iter()
            .flat_map(|bytes| ["GPU", "MIG"].map(|prefix| uuid_string(prefix, &bytes)));
        for candidate in by_uuid {
            if nvml.device_by_uuid(candidate.as_str()).is_ok() {
                return Some(Self {
                    nvml,
                    matched_by: format!("UUID {candidate}"),
                    uuid: candidate,
                });
            }
        }
        let attr = |a| ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok());
        let bus_id = pci_bus_id(
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
        );
        let uuid = nvml
            .device_by_pci_bus_id(bus_id.as_str())
            .and_then(|d| d.uuid())
            .ok()?;
        Some(Self {
            nvml,
            uuid,
            matched_by: format!("PCI bus {bus_id}"),
        })
    }

    /// The matched device: the MIG slice itself on a MIG slice.
    fn device(&self) -> Option<nvml_wrapper::Device<'_>> {
        self.nvml.device_by_uuid(self.uuid.as_str()).ok()
    }

    /// The whole GPU: the parent of a MIG slice, else the device itself. Clocks and
    /// the PCIe link are read here (a MIG handle has none of its own).
    fn whole_gpu(&self) -> Option<nvml_wrapper::Device<'_>> {
        let device = self.device()?;
        if self.is_mig() {
            device.mig_parent_device().ok()
        } else {
            Some(device)
        }
    }

    /// Whether the device is a MIG slice.
    pub fn is_mig(&self) -> bool {
        self.uuid.starts_with("MIG-")
    }

    /// NVML's UUID of the device.
    pub fn uuid(&self) -> &str {
        &self.uuid
    }

    /// Processes holding memory on this GPU (host PIDs, even inside a container).
    pub fn processes(&self) -> Option<Vec<GpuProcess>> {
        let procs = self.device()?.running_compute_processes().ok()?;
        Some(
            procs
                .iter()
                .map(|p| GpuProcess {
                    pid: p.pid,
                    used_bytes: match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => Some(b),
                        UsedGpuMemory::Unavailable => None,
                    },
                })
                .collect(),
        )
    }

    /// `(used, total)` device memory in bytes, as nvidia-smi shows it.
    pub fn memory(&self) -> Option<(u64, u64)> {
        let info = self.device()?.memory_info().ok()?;
        Some((info.used, info.total))
    }

    /// The PCIe link: `(current generation, current width, max generation, max width)`.
    /// Idle links train down, so only the maximum says what the slot can do.
    pub fn pcie(&self) -> Option<(u32, u32, u32, u32)> {
        let d = self.whole_gpu()?;
        let (generation, width) = (
            d.current_pcie_link_gen().ok()?,
            d.current_pcie_link_width().ok()?,
        );
        Some((
            generation,
            width,
            d.max_pcie_link_gen().unwrap_or(generation),
            d.max_pcie_link_width().unwrap_or(width),
        ))
    }

    /// Maximum SM and memory clocks in MHz.
    pub fn max_clocks(&self) -> (Option<u32>, Option<u32>) {
        let Some(d) = self.whole_gpu() else {
            return (None, None);
        };
        (
            d.max_clock_info(Clock::SM).ok(),
            d.max_clock_info(Clock::Memory).ok(),
        )
    }

    /// The driver's version string and the CUDA version it supports (`13.0`).
    pub fn driver(&self) -> (Option<String>, Option<String>) {
        (
            self.nvml.sys_driver_version().ok(),
            self.nvml
                .sys_cuda_driver_version()
                .ok()
                .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_spelled_as_nvml_spells_them() {
        let bytes = [
            0x3b, 0x1f, 0x00, 0xa2, 0x5c, 0x11, 0x4e, 0x9d, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef,
            0x00, 0x42,
        ];
        assert_eq!(
            uuid_string("GPU", &bytes),
            "GPU-3b1f00a2-5c11-4e9d-8001-deadbeef0042"
        );
        assert_eq!(pci_bus_id(0, 0x3b, 0), "00000000:3B:00.0");
    }

    #[test]
    fn only_a_mig_slice_labels_its_figures_as_the_parent_gpus() {
        let note = mig_note("MIG-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff").unwrap();
        assert!(
            note.contains("MIG-9f8e7d6c") && note.contains("parent"),
            "{note}"
        );
        assert_eq!(mig_note("GPU-3b1f00a2-5c11-4e9d-8001-deadbeef0042"), None);
    }
}
