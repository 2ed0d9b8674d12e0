//! The GPU layer's one error type. Every fallible call under `server/gpu/` returns
//! [`GpuError`]; its `Display` is written for a student or an instructor (what failed,
//! the library's own code, and what to install when something is missing), because
//! that text ends up in a failed job, the device card's note and `gpulab doctor`.

use cudarc::driver::DriverError;

/// Everything a GPU call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// An NVIDIA library could not be found by the dynamic loader.
    #[error("{library} not found: {hint}")]
    Missing {
        /// The file name looked for, e.g. `libnvrtc.so`.
        library: &'static str,
        /// What was tried, what to install, or which variable to set.
        hint: String,
    },
    /// A CUDA driver call failed.
    #[error("{what}: {source}")]
    Driver {
        /// What was being done, e.g. `device allocation failed`.
        what: &'static str,
        /// The driver's error code and name.
        #[source]
        source: DriverError,
    },
    /// A cuBLAS call failed.
    #[error("cuBLAS {what} failed: {status}")]
    Blas {
        /// Which call, e.g. `gemm_ex (bf16)`.
        what: String,
        /// cuBLAS's status name, e.g. `CUBLAS_STATUS_NOT_SUPPORTED`.
        status: String,
    },
    /// NVRTC refused a kernel file; `log` is its compile log.
    #[error("NVRTC could not compile {file}: {log}")]
    Compile {
        /// The file in `kernels/`.
        file: &'static str,
        /// NVRTC's message.
        log: String,
    },
    /// A kernel name that no file in `kernels/` defines (a bug).
    #[error("no kernel named {0}")]
    UnknownKernel(String),
    /// A buffer or matrix shape that does not fit the call: checked before any launch,
    /// so a wrong size is an error instead of an out-of-bounds access.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// The device cannot do this (too old, too small, too large a request).
    #[error("{0}")]
    Unsupported(String),
    /// A library call panicked (cudarc's way of reporting a missing symbol).
    #[error("the CUDA library call panicked: {0}")]
    Panicked(String),
}

/// Adds what was being done to a driver error: `stream.synchronize().what("…")?`.
pub trait DriverContext<T> {
    /// Wraps the error as [`GpuError::Driver`] with `what`.
    fn what(self, what: &'static str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn what(self, what: &'static str) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver { what, source })
    }
}

impl From<DriverError> for GpuError {
    fn from(source: DriverError) -> Self {
        Self::Driver {
            what: "CUDA driver call failed",
            source,
        }
    }
}
