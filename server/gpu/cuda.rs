//! The CUDA backend's device handle, in the spirit of candle's: one context on device
//! 0, its default stream, cuBLAS (later experiments), NVML for the card and process
//! list, and a module cache filled lazily by NVRTC. It is created and used only on the
//! engine's worker thread, so no kernel is ever timed while another experiment runs.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;

use super::card::{DeviceCard, PcieLink, cpu_info, pcie_lane_gbps};
use super::kernels;
use super::libs::{Library, guarded};

/// An open CUDA device.
pub struct CudaHandle {
    /// The primary context of device 0.
    pub ctx: Arc<CudaContext>,
    /// The stream every experiment uses, one at a time.
    pub stream: Arc<CudaStream>,
    /// NVML, when the management library is available.
    pub nvml: Option<Nvml>,
    /// NVRTC architecture for this device.
    pub arch: &'static str,
    /// The card, read once.
    pub card: DeviceCard,
    modules: HashMap<&'static str, Arc<CudaModule>>,
    blas: Option<Arc<CudaBlas>>,
}

impl CudaHandle {
    /// Opens device 0, or says which layer is missing.
    pub fn open() -> Result<Self, String> {
        if !Library::Driver.is_present() {
            return Err(format!(
                "{} not found (no NVIDIA driver)",
                Library::Driver.file_name()
            ));
        }
        let ctx = guarded(|| CudaContext::new(0))?
            .map_err(|e| format!("cannot create a CUDA context: {e}"))?;
        // One stream, used by one experiment at a time: cudarc's per-allocation event
        // tracking (for multi-stream safety) would only add overhead to what we time.
        // SAFETY: every allocation and launch in GPU Lab happens on `stream` from the
        // single worker thread, so cross-stream ordering never needs those events.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| format!("cannot read the compute capability: {e}"))?;
        let arch = kernels::arch_for(major, minor).ok_or_else(|| {
            format!("compute capability {major}.{minor} is older than GPU Lab supports (7.0)")
        })?;
        let nvml = guarded(Nvml::init).ok().and_then(Result::ok);
        let card = read_card(&ctx, nvml.as_ref(), major, minor);
        Ok(Self {
            ctx,
            stream,
            nvml,
            arch,
            card,
            modules: HashMap::new(),
            blas: None,
        })
    }

    /// The kernel `function`, compiling and loading its file on first use.
    pub fn function(&mut self, function: &str) -> Result<CudaFunction, String> {
        let file =
            kernels::file_for(function).ok_or_else(|| format!("no kernel named {function}"))?;
        if !self.modules.contains_key(file.name) {
            let ptx = kernels::compile(file, self.arch)?;
            let module = self
                .ctx
                .load_module(ptx)
                .map_err(|e| format!("cannot load {}: {e}", file.name))?;
            self.modules.insert(file.name, module);
        }
        self.modules[file.name]
            .load_function(function)
            .map_err(|e| format!("cannot find {function}: {e}"))
    }

    /// The cuBLAS handle on the experiment stream, created on first use.
    pub fn blas(&mut self) -> Result<Arc<CudaBlas>, String> {
        if self.blas.is_none() {
            if !Library::Cublas.is_present() {
                return Err(format!(
                    "{} not found: install the CUDA toolkit or the nvidia-cublas-cu12 wheel",
                    Library::Cublas.file_name()
                ));
            }
            let stream = Arc::clone(&self.stream);
            let blas = guarded(move || CudaBlas::new(stream))?
                .map_err(|e| format!("cannot create a cuBLAS handle: {e}"))?;
            self.blas = Some(Arc::new(blas));
        }
        Ok(Arc::clone(self.blas.as_ref().expect("set above")))
    }

    /// ReLU of `input` on the GPU through the `relu_f32` kernel: a round trip that
    /// proves compiling, loading and launching work (used by the GPU tests).
    pub fn relu(&mut self, input: &[f32]) -> Result<Vec<f32>, String> {
        let relu = self.function("relu_f32")?;
        let stream = Arc::clone(&self.stream);
        let err = |e: cudarc::driver::DriverError| e.to_string();
        let x = stream.clone_htod(input).map_err(err)?;
        let mut y = stream.alloc_zeros::<f32>(input.len().max(1)).map_err(err)?;
        let n = input.len() as u64;
        let config = LaunchConfig::for_num_elems(
            u32::try_from(input.len().max(1)).map_err(|_| "input too large")?,
        );
        let mut launch = stream.launch_builder(&relu);
        launch.arg(&x).arg(&mut y).arg(&n);
        // SAFETY: relu_f32(const float* x, float* y, u64 n) touches elements [0, n) of
        // x and y, and both buffers hold at least n floats.
        unsafe { launch.launch(config) }.map_err(err)?;
        let mut out = stream.clone_dtoh(&y).map_err(err)?;
        out.truncate(input.len());
        Ok(out)
    }

    /// Whether the context still works: a sticky error (illegal address, failed
    /// launch) makes every later call fail until the context is destroyed.
    pub fn healthy(&self) -> bool {
        let probe = || -> Result<(), cudarc::driver::DriverError> {
            self.stream.synchronize()?;
            let buffer = self.stream.clone_htod(&[1u8])?;
            self.stream.clone_dtoh(&buffer)?;
            Ok(())
        };
        guarded(probe).is_ok_and(|r| r.is_ok())
    }

    /// Destroys device 0's primary context (everything allocated in it is gone) and
    /// opens a fresh handle. Call only after dropping the old handle.
    pub fn reset_and_open() -> Result<Self, String> {
        let reset = || -> Result<(), String> {
            let device = cudarc::driver::result::device::get(0).map_err(|e| e.to_string())?;
            // SAFETY: `device` is a valid ordinal-0 device handle from cuDeviceGet; the
            // reset invalidates every allocation and module of the primary context,
            // and the caller has dropped the handle that owned them. Buffers still held
            // elsewhere (the allocator playground) only see errors when freed later.
            unsafe { cudarc::driver::sys::cuDevicePrimaryCtxReset_v2(device) }
                .result()
                .map_err(|e| e.to_string())
        };
        guarded(reset)??;
        Self::open()
    }

    /// Other processes using this GPU right now (NVML), when NVML can tell.
    pub fn other_processes(&self) -> Option<usize> {
        let nvml = self.nvml.as_ref()?;
        let device = nvml.device_by_index(0).ok()?;
        let own = std::process::id();
        let procs = device.running_compute_processes().ok()?;
        Some(procs.iter().filter(|p| p.pid != own).count())
    }
}

fn read_card(ctx: &Arc<CudaContext>, nvml: Option<&Nvml>, major: i32, minor: i32) -> DeviceCard {
    let attr = |a| ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok());
    let device = nvml.and_then(|n| n.device_by_index(0).ok());
    let pcie = device.as_ref().and_then(|d| {
        let (generation, width) = (
            d.current_pcie_link_gen().ok()?,
            d.current_pcie_link_width().ok()?,
        );
        let (max_generation, max_width) = (
            d.max_pcie_link_gen().unwrap_or(generation),
            d.max_pcie_link_width().unwrap_or(width),
        );
        Some(PcieLink {
            generation,
            width,
            max_generation,
            max_width,
            peak_gbps: pcie_lane_gbps(max_generation) * f64::from(max_width),
        })
    });
    let cuda_version = nvml
        .and_then(|n| n.sys_cuda_driver_version().ok())
        .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
    DeviceCard {
        kind: "cuda",
        name: ctx.name().unwrap_or_else(|_| "NVIDIA GPU".to_string()),
        compute_capability: Some(format!("{major}.{minor}")),
        sm_count: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        memory_total_bytes: ctx.total_mem().ok().map(|b| b as u64),
        l2_cache_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
        sm_clock_max_mhz: device
            .as_ref()
            .and_then(|d| d.max_clock_info(Clock::SM).ok()),
        memory_clock_max_mhz: device
            .as_ref()
            .and_then(|d| d.max_clock_info(Clock::Memory).ok()),
        pcie,
        driver_version: nvml.and_then(|n| n.sys_driver_version().ok()),
        cuda_driver_version: cuda_version,
        cpu: cpu_info(),
        note: "Experiments run on this GPU, one at a time.".to_string(),
    }
}
