//! cuBLAS through the C functions GPU Lab calls, taken from whichever
//! `libcublas.so.13` / `.12` [`loader::open`] found (the same signatures in both;
//! tests/cuda_libraries.rs checks them and the constants below against both versions'
//! `cublas_api.h` and `library_types.h`). [`Handle`] owns one cuBLAS handle bound to a
//! stream; `blas.rs` builds every GEMM on it.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use super::error::GpuError;
use super::loader::{self, Library, Loaded};

type Status = c_int;
type RawHandle = *mut c_void;
const SUCCESS: Status = 0;

/// `cublasOperation_t`.
pub const OP_N: c_int = 0;
/// `cublasOperation_t`: transposed.
pub const OP_T: c_int = 1;
/// `cublasGemmAlgo_t`: let cuBLAS choose.
pub const GEMM_DEFAULT: c_int = -1;
/// `cudaDataType` values.
pub const R_32F: c_int = 0;
/// FP64.
pub const R_64F: c_int = 1;
/// FP16.
pub const R_16F: c_int = 2;
/// BF16.
pub const R_16BF: c_int = 14;
/// `cublasComputeType_t`: FP32 multiply-add.
pub const COMPUTE_32F: c_int = 68;
/// FP32 storage, TF32 tensor-core multiplies.
pub const COMPUTE_32F_FAST_TF32: c_int = 77;
/// FP64 throughout.
pub const COMPUTE_64F: c_int = 70;
/// `libraryPropertyType`: major, minor and patch version.
const PROPERTIES: [c_int; 3] = [0, 1, 2];

type GemmEx = unsafe extern "C" fn(
    RawHandle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;

/// The loaded library and its functions.
pub struct Cublas {
    create: unsafe extern "C" fn(*mut RawHandle) -> Status,
    destroy: unsafe extern "C" fn(RawHandle) -> Status,
    set_stream: unsafe extern "C" fn(RawHandle, *mut c_void) -> Status,
    gemm_ex: GemmEx,
    status_string: unsafe extern "C" fn(Status) -> *const c_char,
    /// The file it was loaded from.
    pub path: String,
    /// `(major, minor, patch)`.
    pub version: (i32, i32, i32),
    _library: Loaded,
}

static CUBLAS: OnceLock<Result<Cublas, GpuError>> = OnceLock::new();

/// cuBLAS, loaded on first use (the newest usable version; see [`loader`]); a failed
/// load is remembered and reported again.
pub fn get() -> Result<&'static Cublas, GpuError> {
    CUBLAS
        .get_or_init(Cublas::load)
        .as_ref()
        .map_err(|e| GpuError::Unsupported(e.to_string()))
}

impl Cublas {
    fn load() -> Result<Self, GpuError> {
        let loaded = loader::open(Library::Cublas, loader::driver_major(), loader::device_sm())?;
        let get_property: unsafe extern "C" fn(c_int, *mut c_int) -> Status;
        // SAFETY: each symbol is looked up by its C name and given that name's signature
        // in cublas_api.h of CUDA 12 and 13 (checked by tests/cuda_libraries.rs); the
        // copied pointers stay valid because `loaded` is kept in the same struct.
        let mut cublas = unsafe {
            let lib = &loaded.library;
            get_property = *lib.get(b"cublasGetProperty\0").map_err(missing)?;
            Self {
                create: *lib.get(b"cublasCreate_v2\0").map_err(missing)?,
                destroy: *lib.get(b"cublasDestroy_v2\0").map_err(missing)?,
                set_stream: *lib.get(b"cublasSetStream_v2\0").map_err(missing)?,
                gemm_ex: *lib.get(b"cublasGemmEx\0").map_err(missing)?,
                status_string: *lib.get(b"cublasGetStatusString\0").map_err(missing)?,
                path: loaded.path.clone(),
                version: (0, 0, 0),
                _library: loaded,
            }
        };
        let mut parts = [0 as c_int; 3];
        for (part, property) in parts.iter_mut().zip(PROPERTIES) {
            // SAFETY: cublasGetProperty writes one int; it needs no handle or GPU.
            cublas.check(unsafe { get_property(property, part) }, "cublasGetProperty")?;
        }
        cublas.version = (parts[0], parts[1], parts[2]);
        Ok(cublas)
    }

    /// `cuBLAS 13.0.2 (…/libcublas.so.13)`.
    pub fn describe(&self) -> String {
        let (major, minor, patch) = self.version;
        format!("cuBLAS {major}.{minor}.{patch} ({})", self.path)
    }

    fn check(&self, status: Status, what: &str) -> Result<(), GpuError> {
        if status == SUCCESS {
            return Ok(());
        }
        // SAFETY: cublasGetStatusString returns a static NUL-terminated string for any
        // status.
        let text = unsafe { (self.status_string)(status) };
        let name = if text.is_null() {
            format!("status {status}")
        } else {
            // SAFETY: checked non-null; static string.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        Err(GpuError::Blas {
            what: what.to_string(),
            status: name,
        })
    }
}

/// One cuBLAS handle whose work goes on one stream.
pub struct Handle {
    api: &'static Cublas,
    raw: RawHandle,
}

// SAFETY: a cuBLAS handle may be used from any thread as long as calls on it do not
// overlap; `Handle` is only used through `&self` by the engine worker that owns the
// `Gpu` (one at a time), and moving it between threads is allowed by cuBLAS.
unsafe impl Send for Handle {}
// SAFETY: see above; `Blas` is shared behind an `Arc` but used by one worker at a time.
unsafe impl Sync for Handle {}

impl Handle {
    /// A handle whose work is queued on `stream` (a raw `CUstream`).
    ///
    /// # Safety
    /// `stream` must be a live stream of the current context and outlive the handle.
    pub unsafe fn new(stream: *mut c_void) -> Result<Self, GpuError> {
        let api = get()?;
        let mut raw: RawHandle = std::ptr::null_mut();
        // SAFETY: writes the new handle into `raw`.
        api.check(unsafe { (api.create)(&raw mut raw) }, "handle creation")?;
        let handle = Self { api, raw };
        // SAFETY: `raw` is the live handle just created; the caller vouches for `stream`.
        api.check(unsafe { (api.set_stream)(raw, stream) }, "binding a stream")?;
        Ok(handle)
    }

    /// `cublasGemmEx` with the arguments in cuBLAS's order.
    ///
    /// # Safety
    /// The pointers must be device memory of the stated types and sizes for the
    /// column-major product `m × k` by `k × n` into `m × n` with leading dimensions
    /// `lda`, `ldb`, `ldc`; `alpha` and `beta` must point at scalars of the compute
    /// type's scale type.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_ex(
        &self,
        (transa, transb): (c_int, c_int),
        (m, n, k): (c_int, c_int, c_int),
        alpha: *const c_void,
        (a, a_type, lda): (*const c_void, c_int, c_int),
        (b, b_type, ldb): (*const c_void, c_int, c_int),
        beta: *const c_void,
        (c, c_type, ldc): (*mut c_void, c_int, c_int),
        compute: c_int,
        what: &str,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller upholds the contract above; the handle is live.
        let status = unsafe {
            (self.api.gemm_ex)(
                self.raw,
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                a,
                a_type,
                lda,
                b,
                b_type,
                ldb,
                beta,
                c,
                c_type,
                ldc,
                compute,
                GEMM_DEFAULT,
            )
        };
        self.api.check(status, what)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cublasCreate_v2 and is destroyed once.
        unsafe { (self.api.destroy)(self.raw) };
    }
}

fn missing(error: libloading::Error) -> GpuError {
    GpuError::Unsupported(format!("libcublas lacks a function GPU Lab needs: {error}"))
}
