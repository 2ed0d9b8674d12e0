//! The GPU layer: the only code that talks to CUDA, and the only place in GPU Lab with
//! `unsafe` (each block with a `// SAFETY:` line). Everything above it — the
//! experiments, the engine, the web layer — sees safe, typed calls and one error type.
//!
//! - [`loader`]: run-time loading of libcuda / libnvrtc / libcublas without panicking;
//!   [`search_path`]: the folders (toolkit, every Python environment) it looks in;
//!   [`platform`]: each OS's file names and folders (Linux, Windows; macOS has no
//!   CUDA); [`dynload`]: the OS's loader (`dlopen`/`dladdr`, `LoadLibraryExW`).
//! - [`device`]: [`Gpu`], the handle (context, main stream, card, kernels, cuBLAS), and
//!   [`Stream`] with its buffers and copies.
//! - [`copies`]: host↔device byte copies in stream order behind one trait, each copy
//!   to or from pinned memory holding its host buffer until waited for; [`standin`]:
//!   the same queue on the CPU, running copies as late as a driver may (CI's GPU).
//! - [`kernels`]: the `.cu` files in `kernels/`, embedded and compiled by NVRTC;
//!   [`launch`]: one typed, size-checked launcher per kernel.
//! - [`blas`]: every GEMM in every dtype through one `cublasGemmEx` wrapper, with the
//!   row-major → column-major mapping as data that tests replay on the CPU.
//! - [`graph`]: CUDA graphs (stream capture, one-call replay) for the launch experiment.
//! - [`timer`]: CUDA-event and synchronised host clocks for `measure::repeat`, and
//!   marks for timelines.
//! - [`memory`]: device memory as the driver and NVML see it, and raw blocks for the
//!   allocator playground.
//! - [`visible`]: which GPU `worker --gpu N` takes from the mask it was given.
//! - [`card`]: the device card; [`doctor`]: the layered check a newcomer reads.
//! - [`error`]: the layer's one error type, [`GpuError`].
//!
//! The binary is one build for both backends: no cargo feature and no CUDA at build
//! time. Without a GPU nothing here is opened, and the experiments run their CPU path.

#![allow(unsafe_code)]

pub mod blas;
pub mod card;
pub mod copies;
pub mod cublas;
pub mod device;
pub mod doctor;
pub mod dynload;
pub mod error;
pub mod graph;
pub mod kernels;
pub mod launch;
pub mod loader;
pub mod memory;
pub mod nvml;
pub mod nvrtc;
pub mod platform;
pub mod search_path;
pub mod standin;
pub mod stream;
pub mod timer;
pub mod visible;

pub use blas::{Blas, BlasScalar, Compute, Operand, Output};
pub use card::{DeviceCard, DeviceKind};
pub use device::{Gpu, PinnedBuffer};
pub use error::GpuError;
pub use graph::Graph;
pub use launch::{Activation, AdamStep, COLUMN_CHUNK_ROWS, Kernels, column_chunks, fills_the_gpu};
pub use memory::{DeviceBlock, DeviceMemory};
pub use nvml::GpuProcess;
pub use stream::{DeviceBuffer, Element, Stream};
pub use timer::{EventClock, Marks, SyncedHostClock};

/// Makes GPU `ordinal` the only one this process sees (`gpulab worker --gpu N`): the
/// N-th entry of the `CUDA_VISIBLE_DEVICES` it was given, or GPU N in PCI-bus order
/// (see [`visible`]). Call before anything loads the driver. Returns the log line.
pub fn select_device(ordinal: u32) -> Result<String, String> {
    visible::apply(ordinal)
}
