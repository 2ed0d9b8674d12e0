//! NVRTC, the run-time CUDA compiler, through the dozen C functions GPU Lab needs,
//! taken from whichever `libnvrtc.so.13` / `.12` [`loader::open`] found. Their C
//! signatures are the same in CUDA 12 and 13 (tests/cuda_libraries.rs checks them
//! against both versions' `nvrtc.h`), which is what lets one binary use either.
//!
//! Kernels are compiled to a **cubin** for the device's own `sm_XY` when this NVRTC
//! knows it: a cubin needs no JIT in the driver, so it loads even when NVRTC is newer
//! than the driver (the PTX from a newer NVRTC would fail with
//! `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`). For a GPU newer than NVRTC, PTX for the
//! newest architecture it knows is left for the driver to compile.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

use super::error::GpuError;
use super::loader::{self, Library, Loaded};

type Status = c_int;
type Program = *mut c_void;
const SUCCESS: Status = 0;

/// The C functions, copied out of the library (valid while it stays loaded).
struct Functions {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    num_supported_archs: unsafe extern "C" fn(*mut c_int) -> Status,
    supported_archs: unsafe extern "C" fn(*mut c_int) -> Status,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Status,
    destroy: unsafe extern "C" fn(*mut Program) -> Status,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    log: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    error_string: unsafe extern "C" fn(Status) -> *const c_char,
}

/// The loaded compiler.
pub struct Nvrtc {
    functions: Functions,
    /// The file it was loaded from.
    pub path: String,
    /// NVRTC's own version, `(major, minor)`.
    pub version: (i32, i32),
    /// The architectures it compiles for, as `sm` numbers (`90` for 9.0), ascending.
    pub archs: Vec<u32>,
    _library: Loaded,
}

/// What to compile for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Machine code for exactly this `sm` (e.g. 90): loads without a JIT.
    Cubin(u32),
    /// PTX for this virtual architecture; the driver compiles it when loading.
    Ptx(u32),
}

impl Target {
    /// The `--gpu-architecture` option.
    pub fn option(self) -> String {
        match self {
            Self::Cubin(sm) => format!("--gpu-architecture=sm_{sm}"),
            Self::Ptx(sm) => format!("--gpu-architecture=compute_{sm}"),
        }
    }

    /// `cubin for sm_90` / `PTX for compute_100`.
    pub fn describe(self) -> String {
        match self {
            Self::Cubin(sm) => format!("cubin for sm_{sm}"),
            Self::Ptx(sm) => format!("PTX for compute_{sm}"),
        }
    }
}

/// A compiled program: machine code, or PTX text for the driver to compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binary {
    /// An ELF cubin.
    Cubin(Vec<u8>),
    /// PTX assembly.
    Ptx(String),
}

static NVRTC: OnceLock<Result<Nvrtc, GpuError>> = OnceLock::new();

/// NVRTC, loaded on first use (the newest usable version; see [`loader`]); a failed
/// load is remembered and reported again.
pub fn get() -> Result<&'static Nvrtc, GpuError> {
    NVRTC
        .get_or_init(Nvrtc::load)
        .as_ref()
        .map_err(|e| GpuError::Unsupported(e.to_string()))
}

impl Nvrtc {
    fn load() -> Result<Self, GpuError> {
        let loaded = loader::open(Library::Nvrtc, loader::driver_major(), loader::device_sm())?;
        // SAFETY: each symbol is looked up by its C name and given the signature that
        // name has in nvrtc.h of CUDA 12 and 13 (checked by tests/cuda_libraries.rs);
        // the copied pointers stay valid because `loaded` is kept in the same struct.
        let functions = unsafe {
            let lib = &loaded.library;
            Functions {
                version: *lib.get(b"nvrtcVersion\0").map_err(missing)?,
                num_supported_archs: *lib.get(b"nvrtcGetNumSupportedArchs\0").map_err(missing)?,
                supported_archs: *lib.get(b"nvrtcGetSupportedArchs\0").map_err(missing)?,
                create: *lib.get(b"nvrtcCreateProgram\0").map_err(missing)?,
                destroy: *lib.get(b"nvrtcDestroyProgram\0").map_err(missing)?,
                compile: *lib.get(b"nvrtcCompileProgram\0").map_err(missing)?,
                log_size: *lib.get(b"nvrtcGetProgramLogSize\0").map_err(missing)?,
                log: *lib.get(b"nvrtcGetProgramLog\0").map_err(missing)?,
                ptx_size: *lib.get(b"nvrtcGetPTXSize\0").map_err(missing)?,
                ptx: *lib.get(b"nvrtcGetPTX\0").map_err(missing)?,
                cubin_size: *lib.get(b"nvrtcGetCUBINSize\0").map_err(missing)?,
                cubin: *lib.get(b"nvrtcGetCUBIN\0").map_err(missing)?,
                error_string: *lib.get(b"nvrtcGetErrorString\0").map_err(missing)?,
            }
        };
        let mut nvrtc = Self {
            functions,
            path: loaded.path.clone(),
            version: (0, 0),
            archs: Vec::new(),
            _library: loaded,
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion writes one int through each pointer.
        nvrtc.check(unsafe { (nvrtc.functions.version)(&raw mut major, &raw mut minor) })?;
        nvrtc.version = (major, minor);
        let mut count: c_int = 0;
        // SAFETY: writes one int.
        nvrtc.check(unsafe { (nvrtc.functions.num_supported_archs)(&raw mut count) })?;
        let mut archs = vec![0 as c_int; usize::try_from(count).unwrap_or(0)];
        // SAFETY: writes `count` ints into `archs`, which holds exactly that many.
        nvrtc.check(unsafe { (nvrtc.functions.supported_archs)(archs.as_mut_ptr()) })?;
        nvrtc.archs = archs
            .into_iter()
            .filter_map(|a| u32::try_from(a).ok())
            .collect();
        nvrtc.archs.sort_unstable();
        Ok(nvrtc)
    }

    /// `NVRTC 13.0 (…/libnvrtc.so.13)`.
    pub fn describe(&self) -> String {
        format!(
            "NVRTC {}.{} ({})",
            self.version.0, self.version.1, self.path
        )
    }

    /// What to compile for a device of compute capability `major.minor`: a cubin for
    /// its own `sm` when NVRTC knows it, else PTX for the newest architecture below it.
    pub fn target_for(&self, major: i32, minor: i32) -> Result<Target, GpuError> {
        let sm = u32::try_from(major * 10 + minor).unwrap_or(0);
        if self.archs.contains(&sm) {
            return Ok(Target::Cubin(sm));
        }
        match self.archs.iter().rev().find(|a| **a <= sm) {
            Some(&older) => Ok(Target::Ptx(older)),
            None => Err(GpuError::Unsupported(format!(
                "{} compiles for {}; this GPU is compute capability {major}.{minor}{}",
                self.describe(),
                self.supported_range(),
                if self.version.0 >= 13 {
                    " — use the CUDA 12 libraries (libnvrtc.so.12), which still support it"
                } else {
                    ""
                }
            ))),
        }
    }

    /// `sm_75 … sm_121`.
    pub fn supported_range(&self) -> String {
        match (self.archs.first(), self.archs.last()) {
            (Some(low), Some(high)) => format!("sm_{low} … sm_{high}"),
            _ => "no architecture".to_string(),
        }
    }

    /// Compiles `source` (the file `name` in `kernels/`) for `target` with extra
    /// `options`. A refusal is [`GpuError::Compile`] with NVRTC's log.
    pub fn compile(
        &self,
        source: &str,
        name: &'static str,
        target: Target,
        options: &[String],
    ) -> Result<Binary, GpuError> {
        let refused = |log: &str| GpuError::Compile {
            file: name,
            log: log.to_string(),
        };
        let text = CString::new(source).map_err(|_| refused("the source contains a NUL byte"))?;
        let c_name = CString::new(name).map_err(|_| refused("the name contains a NUL byte"))?;
        let all: Vec<CString> = std::iter::once(target.option())
            .chain(options.iter().cloned())
            .map(|o| CString::new(o).map_err(|_| refused("an option contains a NUL byte")))
            .collect::<Result<_, _>>()?;
        let pointers: Vec<*const c_char> = all.iter().map(|o| o.as_ptr()).collect();
        let mut program: Program = std::ptr::null_mut();
        // SAFETY: source and name are NUL-terminated and outlive the call; no headers
        // are passed (count 0, null arrays). NVRTC copies what it needs.
        let status = unsafe {
            (self.functions.create)(
                &raw mut program,
                text.as_ptr(),
                c_name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        self.check(status)?;
        let program = ProgramGuard {
            program,
            destroy: self.functions.destroy,
        };
        let count = c_int::try_from(pointers.len()).unwrap_or(c_int::MAX);
        // SAFETY: `pointers` holds `count` NUL-terminated options that outlive the call.
        let status = unsafe { (self.functions.compile)(program.program, count, pointers.as_ptr()) };
        if status != SUCCESS {
            let log = self.read(&program, self.functions.log_size, self.functions.log);
            let log = String::from_utf8_lossy(&log)
                .trim_end_matches('\0')
                .trim()
                .to_string();
            return Err(refused(&if log.is_empty() {
                self.message(status)
            } else {
                log
            }));
        }
        Ok(match target {
            Target::Cubin(_) => {
                Binary::Cubin(self.read(&program, self.functions.cubin_size, self.functions.cubin))
            }
            Target::Ptx(_) => {
                let ptx = self.read(&program, self.functions.ptx_size, self.functions.ptx);
                Binary::Ptx(
                    String::from_utf8_lossy(&ptx)
                        .trim_end_matches('\0')
                        .to_string(),
                )
            }
        })
    }

    /// Reads one of the program's outputs (log, PTX, cubin): its size, then its bytes.
    fn read(
        &self,
        program: &ProgramGuard,
        size: unsafe extern "C" fn(Program, *mut usize) -> Status,
        fill: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    ) -> Vec<u8> {
        let mut len = 0usize;
        // SAFETY: writes one size_t; the program is valid until the guard drops.
        if unsafe { size(program.program, &raw mut len) } != SUCCESS {
            return Vec::new();
        }
        let mut bytes = vec![0u8; len];
        // SAFETY: NVRTC writes exactly the `len` bytes it reported into `bytes`.
        if unsafe { fill(program.program, bytes.as_mut_ptr().cast()) } != SUCCESS {
            return Vec::new();
        }
        bytes
    }

    fn check(&self, status: Status) -> Result<(), GpuError> {
        if status == SUCCESS {
            Ok(())
        } else {
            Err(GpuError::Unsupported(format!(
                "NVRTC call failed: {}",
                self.message(status)
            )))
        }
    }

    fn message(&self, status: Status) -> String {
        // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string for any
        // status (an "unrecognized" one for unknown codes).
        let text = unsafe { (self.functions.error_string)(status) };
        if text.is_null() {
            return format!("NVRTC status {status}");
        }
        // SAFETY: checked non-null; the string is static.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Destroys the program when compiling ends, on every path.
struct ProgramGuard {
    program: Program,
    destroy: unsafe extern "C" fn(*mut Program) -> Status,
}

impl Drop for ProgramGuard {
    fn drop(&mut self) {
        // SAFETY: `program` came from nvrtcCreateProgram and is destroyed once.
        unsafe { (self.destroy)(&raw mut self.program) };
    }
}

fn missing(error: libloading::Error) -> GpuError {
    GpuError::Unsupported(format!("libnvrtc lacks a function GPU Lab needs: {error}"))
}
