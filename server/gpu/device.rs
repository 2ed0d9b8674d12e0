//! The CUDA device handle, in the spirit of candle's: one [`Gpu`] owns the primary
//! context of device 0, its main [`Stream`], NVML for the card, and the compiled
//! kernels and cuBLAS handle, both created on first use. Experiments get safe methods
//! only (buffers, copies, streams, clocks, kernels, GEMMs); every `unsafe` call lives in
//! this folder with its `// SAFETY:` line. A handle is created and used on one engine
//! worker thread, so no kernel is ever timed while another experiment runs on it.

use std::sync::Arc;

use super::blas::Blas;
use super::card::{DeviceCard, read_card};
use super::error::{DriverContext, GpuError};
use super::launch::Kernels;
use super::loader::{guarded, require_driver};
use super::memory::{DeviceMemory, others};
use super::nvml::NvmlDevice;
use super::nvrtc;
use super::stream::{DeviceBuffer, Element, Stream};
use cudarc::driver::sys::{CUmemorytype, CUpointer_attribute, CUresult};
use cudarc::driver::{CudaContext, DevicePtr, PinnedHostSlice};

/// An open CUDA device: every layer GPU Lab needs works, or [`Gpu::open`] fails.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Stream,
    nvml: Option<NvmlDevice>,
    card: DeviceCard,
    kernels: Arc<Kernels>,
    blas: Arc<Blas>,
}

impl Gpu {
    /// Opens device 0 with everything the experiments use — the context, a stream of
    /// its own, every kernel compiled by NVRTC *and loaded by the driver*, and a cuBLAS
    /// handle — or says which layer is missing. There is no half-open GPU: a server
    /// whose GPU fails here runs every experiment on the CPU.
    pub fn open() -> Result<Self, GpuError> {
        require_driver()?;
        let ctx = guarded(|| CudaContext::new(0))?.what("cannot create a CUDA context")?;
        // Experiments order their streams themselves (fork and join); cudarc's
        // per-allocation event tracking would only add overhead to what we time.
        // SAFETY: every buffer is used on the stream it was allocated on, or on a stream
        // forked from it after the allocation and joined back before it is freed, so the
        // ordering the tracking events would enforce is already explicit.
        unsafe { ctx.disable_event_tracking() };
        // Not the legacy NULL stream: work queued elsewhere in the process (the
        // allocator playground) must not land inside an experiment's timed window.
        let stream = Stream::new(ctx.new_stream().what("cannot create the engine's stream")?);
        let (major, minor) = ctx
            .compute_capability()
            .what("cannot read the compute capability")?;
        let nvrtc = nvrtc::get()?;
        let target = nvrtc.target_for(major, minor)?;
        let kernels = Arc::new(Kernels::load(&ctx, target)?);
        let blas = Arc::new(Blas::new(&stream)?);
        let nvml = NvmlDevice::matching(&ctx);
        let card = read_card(&ctx, nvml.as_ref(), major, minor);
        Ok(Self {
            ctx,
            stream,
            nvml,
            card,
            kernels,
            blas,
        })
    }

    /// What this device is.
    pub fn card(&self) -> &DeviceCard {
        &self.card
    }

    /// The stream every experiment's work goes on unless it forks its own.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Every kernel in `kernels/`, compiled and loaded when the device was opened.
    pub fn kernels(&self) -> Arc<Kernels> {
        Arc::clone(&self.kernels)
    }

    /// The cuBLAS handle on the engine's stream.
    pub fn blas(&self) -> Arc<Blas> {
        Arc::clone(&self.blas)
    }

    /// `len` zeroed elements of page-locked host memory, as nvbandwidth allocates them
    /// (flags 0: not write-combined).
    pub fn pinned<T: Element>(&self, len: usize) -> Result<PinnedBuffer<T>, GpuError> {
        // SAFETY: flags 0 asks for plain page-locked memory; the buffer is zero-filled
        // below, before anything can read it.
        let mut inner = unsafe { self.ctx.alloc_pinned_with_flags::<T>(len.max(1), 0) }
            .what("pinned allocation failed")?;
        inner
            .as_mut_slice()
            .what("pinned buffer unavailable")?
            .iter_mut()
            .for_each(|x| *x = zero());
        Ok(PinnedBuffer { inner })
    }

    /// Device memory for the allocator playground, on this context, with NVML's view
    /// of this same device.
    pub fn memory(&self) -> DeviceMemory {
        DeviceMemory::new(Arc::clone(&self.ctx), self.nvml.clone())
    }

    /// Where the driver says `buffer` lives: `cuda:0` for device memory.
    pub fn location_of_device<T>(&self, buffer: &DeviceBuffer<T>) -> Result<String, GpuError> {
        let (address, _sync) = buffer.device_ptr(self.stream.raw());
        self.location(address)
    }

    /// Where the driver says `host` lives: `cpu` for memory it never allocated.
    pub fn location_of_host<T>(&self, host: &[T]) -> Result<String, GpuError> {
        self.location(host.as_ptr() as u64)
    }

    fn location(&self, address: u64) -> Result<String, GpuError> {
        self.ctx.bind_to_thread().what("cannot bind the context")?;
        let mut kind: u32 = 0;
        // SAFETY: CU_POINTER_ATTRIBUTE_MEMORY_TYPE writes one unsigned int to `data`,
        // which points at `kind`; the context is current on this thread (bound above).
        // For host memory the driver never allocated, it returns an error and writes
        // nothing, which is the answer "cpu".
        let status = unsafe {
            cudarc::driver::sys::cuPointerGetAttribute(
                (&raw mut kind).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                address,
            )
        };
        let device =
            status == CUresult::CUDA_SUCCESS && kind == CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
        Ok(if device { "cuda:0" } else { "cpu" }.to_string())
    }

    /// ReLU of `input` through the `relu_f32` kernel: a round trip that proves
    /// compiling, loading, launching and copying back work.
    pub fn relu(&self, input: &[f32]) -> Result<Vec<f32>, GpuError> {
        let x = self.stream.upload(input)?;
        let mut y = self.stream.zeros::<f32>(input.len())?;
        self.kernels.relu(&self.stream, &x, &mut y, input.len())?;
        let mut out = self.stream.download(&y)?;
        out.truncate(input.len());
        Ok(out)
    }

    /// Whether the context still works: a sticky error (illegal address, failed
    /// launch) makes every later call fail until the context is destroyed.
    pub fn healthy(&self) -> bool {
        let probe = || -> Result<(), GpuError> {
            self.stream.sync()?;
            let buffer = self.stream.upload(&[1u8])?;
            self.stream.download(&buffer)?;
            Ok(())
        };
        guarded(probe).is_ok_and(|r| r.is_ok())
    }

    /// Destroys device 0's primary context (everything allocated in it is gone) and
    /// opens a fresh handle. Call only after dropping the old handle.
    pub fn reset_and_open() -> Result<Self, GpuError> {
        let reset = || -> Result<(), GpuError> {
            let device = cudarc::driver::result::device::get(0).what("cannot find device 0")?;
            // SAFETY: `device` is a valid ordinal-0 handle from cuDeviceGet; the reset
            // invalidates every allocation and module of the primary context, and the
            // caller has dropped the handle that owned them. Buffers still held
            // elsewhere (the allocator playground) only see errors when freed later.
            unsafe { cudarc::driver::sys::cuDevicePrimaryCtxReset_v2(device) }
                .result()
                .what("resetting the context failed")
        };
        guarded(reset)??;
        Self::open()
    }

    /// Hands memory that finished jobs freed back to the driver: waits for every
    /// stream (a buffer freed on a stream is only free once the stream gets there),
    /// then trims the device's stream-ordered pool (where cudarc's `cuMemAllocAsync`
    /// buffers come from) to nothing kept. Without it a snapshot after a 1 GiB
    /// transfer could show that GiB as used by the server. The engine calls it after
    /// every job.
    pub fn release_free_memory(&self) -> Result<(), GpuError> {
        self.ctx
            .synchronize()
            .what("synchronising before the trim failed")?;
        let pools = self
            .ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            )
            .what("cannot ask whether the device has memory pools")?;
        if pools == 0 {
            return Ok(()); // no pool: cudarc allocated with cuMemAlloc, freed at once
        }
        let mut pool: cudarc::driver::sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: cuDeviceGetMemPool writes one pool handle into `pool`, a live local;
        // the device handle comes from this live context.
        unsafe { cudarc::driver::sys::cuDeviceGetMemPool(&raw mut pool, self.ctx.cu_device()) }
            .result()
            .what("cannot find the device's memory pool")?;
        // SAFETY: `pool` is the device's current pool, just returned by the driver; the
        // trim only releases memory no allocation holds (the context was synchronised,
        // so every queued free has happened), and 0 asks to keep nothing reserved.
        unsafe { cudarc::driver::sys::cuMemPoolTrimTo(pool, 0) }
            .result()
            .what("trimming the memory pool failed")
    }

    /// Other processes using this GPU right now (NVML), when NVML can tell.
    pub fn other_processes(&self) -> Option<usize> {
        let pids: Vec<u32> = self
            .nvml
            .as_ref()?
            .processes()?
            .iter()
            .map(|p| p.pid)
            .collect();
        Some(others(&pids, std::process::id()))
    }
}

/// Page-locked host memory the GPU copies from directly, without a staging buffer.
pub struct PinnedBuffer<T> {
    inner: PinnedHostSlice<T>,
}

impl<T: Element> PinnedBuffer<T> {
    /// The memory, to read. Like [`Self::as_mut_slice`] this does not wait for copies
    /// queued into it.
    pub fn as_slice(&self) -> Result<&[T], GpuError> {
        self.inner.as_slice().what("pinned buffer unavailable")
    }

    /// The memory as a slice. This does not wait for copies queued from or into it
    /// (GPU Lab turns cudarc's event tracking off): a copy from pinned memory runs
    /// later, so sync its stream before the host writes a source or reads a result.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], GpuError> {
        self.inner.as_mut_slice().what("pinned buffer unavailable")
    }
}

/// The all-zero value of `T` (every [`Element`] is valid as zero bits).
fn zero<T: Element>() -> T {
    // SAFETY: `Element` requires cudarc's `ValidAsZeroBits`, whose contract is exactly
    // that the all-zero bit pattern is a valid `T`.
    unsafe { std::mem::zeroed() }
}
