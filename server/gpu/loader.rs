//! Finding and loading the NVIDIA libraries at run time, on CUDA 12 and CUDA 13
//! machines, from one binary built without CUDA.
//!
//! The driver (`libcuda.so.1`) comes with the NVIDIA driver and keeps every older entry
//! point, so cudarc's CUDA 12.8 driver bindings work on drivers R525 (CUDA 12.0) through
//! R580+ (CUDA 13). NVRTC and cuBLAS carry the toolkit's major version in their file
//! names (`libnvrtc.so.12`, `libnvrtc.so.13`), and a library newer than the driver
//! cannot run on it, so GPU Lab resolves those two itself: it asks the driver which CUDA
//! it supports (`cuDriverGetVersion`) and tries the newest major not above it (13, then
//! 12; both without a driver), first in `GPULAB_CUDA_LIB` (when set, the only place
//! searched), then on the loader's path (`LD_LIBRARY_PATH`, ldconfig), then in the
//! usual toolkit folders and the NVIDIA pip wheels' folders ([`search_path`]). A GPU
//! older than CUDA 13's oldest architecture (NVRTC 13.0 compiles for sm_75 and up)
//! gets the CUDA 12 set; `GPULAB_CUDA_MAJOR=12|13` forces one. A failure lists the
//! names and folders tried, the loader's own error (`dlerror`) for every file that
//! exists but did not load, and where the wheels put the files.
//!
//! A `libcuda.so` that loads is not yet a driver: the CUDA toolkit ships a stub of it
//! in `lib64/stubs` for linking, and every call into the stub fails with
//! `CUDA_ERROR_STUB_LIBRARY` (34). [`require_driver`] calls `cuInit` to tell the two
//! apart, and says which file is the stub.
//!
//! [`search_path`]: super::search_path

use std::ffi::{CStr, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use super::error::GpuError;
use super::search_path::{self, SearchEnv};

/// The NVIDIA libraries GPU Lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// The CUDA driver API (`libcuda.so.1`), installed with the NVIDIA driver.
    Driver,
    /// The runtime compiler (`libnvrtc.so.13` / `.12`), from the toolkit or a pip wheel.
    Nvrtc,
    /// cuBLAS (`libcublas.so.13` / `.12`), from the toolkit or a pip wheel.
    Cublas,
}

/// CUDA major versions whose NVRTC and cuBLAS GPU Lab can use, newest first.
pub const SUPPORTED_MAJORS: [u32; 2] = [13, 12];

/// The oldest of them: a driver older than this major (CUDA 12: R525) runs neither set.
const OLDEST_MAJOR: u32 = 12;

/// The oldest architecture (`sm` number) CUDA 13's NVRTC compiles for: 13.0 dropped
/// Maxwell, Pascal and Volta (sm_50 … sm_72); `nvrtcGetSupportedArchs` in the
/// nvidia-cuda-nvrtc 13.0.88 wheel starts at 75 (tests/cuda_libraries.rs checks it).
pub const OLDEST_SM_CUDA_13: u32 = 75;

/// `CUDA_ERROR_STUB_LIBRARY`: every call into the toolkit's stub `libcuda.so` returns
/// it (CUDA Driver API, `CUresult`).
pub const CUDA_ERROR_STUB_LIBRARY: u32 = 34;

impl Library {
    /// The file name without a version, as a newcomer would look for it.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Driver => "libcuda.so",
            Self::Nvrtc => "libnvrtc.so",
            Self::Cublas => "libcublas.so",
        }
    }

    /// The folder (below `site-packages`) where NVIDIA's pip wheel for `major` puts it.
    pub fn wheel_dir(self, major: u32) -> &'static str {
        match (self, major) {
            (Self::Nvrtc, 12) => "nvidia/cuda_nvrtc/lib",
            (Self::Cublas, 12) => "nvidia/cublas/lib",
            _ => "nvidia/cu13/lib",
        }
    }

    /// The pip package that provides it for `major`.
    pub fn wheel(self, major: u32) -> &'static str {
        match (self, major) {
            (Self::Nvrtc, 12) => "nvidia-cuda-nvrtc-cu12",
            (Self::Cublas, 12) => "nvidia-cublas-cu12",
            (Self::Nvrtc, _) => "nvidia-cuda-nvrtc",
            _ => "nvidia-cublas",
        }
    }

    /// What to install when the library is missing.
    pub fn install_hint(self) -> String {
        match self {
            Self::Driver => "no NVIDIA driver is installed, or this container was started without GPU access (--gpus all / NVIDIA Container Toolkit)".to_string(),
            Self::Nvrtc | Self::Cublas => format!(
                "install the CUDA toolkit, or the pip wheels matching the driver: CUDA 13 (driver ≥ 580) `pip install {} nvidia-cuda-runtime` (the runtime wheel brings the headers the kernels need) puts {}.13 in site-packages/{} — not the `nvidia-*-cu13` names, which are empty placeholders; CUDA 12 `pip install {} nvidia-cuda-runtime-cu12` puts {}.12 in site-packages/{}; any virtualenv (activated or a `.venv` here or above), pyenv or python3's own site-packages is searched; or set GPULAB_CUDA_LIB to the folder (GPULAB_CUDA_MAJOR=12 or 13 picks the set)",
                self.wheel(13),
                self.file_name(),
                self.wheel_dir(13),
                self.wheel(12),
                self.file_name(),
                self.wheel_dir(12),
            ),
        }
    }
}

/// Whether the CUDA driver library can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: the presence check only tries `dlopen` on candidate names and drops the
    // handle; it calls no function from the library.
    guarded(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

/// `Ok` when the driver library loads and is a real driver, else
/// [`GpuError::Missing`] with the fix (a stub `libcuda.so` is named as one).
pub fn require_driver() -> Result<(), GpuError> {
    if !driver_present() {
        return Err(GpuError::Missing {
            library: Library::Driver.file_name(),
            hint: Library::Driver.install_hint(),
        });
    }
    // SAFETY: cuInit takes a flags word (0) and touches no memory of ours; calling it
    // again later (cudarc does, creating the context) is allowed and cheap.
    let status = guarded(|| unsafe { cudarc::driver::sys::cuInit(0) });
    match status {
        Ok(s) if s as u32 == CUDA_ERROR_STUB_LIBRARY => Err(GpuError::Unsupported(stub_message(
            driver_path().as_deref(),
        ))),
        _ => Ok(()),
    }
}

/// What to say when `cuInit` answers `CUDA_ERROR_STUB_LIBRARY`, naming the file.
pub fn stub_message(path: Option<&str>) -> String {
    format!(
        "the libcuda.so that loaded{} is a stub (CUDA_ERROR_STUB_LIBRARY, error {CUDA_ERROR_STUB_LIBRARY}): the CUDA toolkit's lib64/stubs copy, made for linking, which cannot run anything. Take its folder off LD_LIBRARY_PATH (or GPULAB_CUDA_LIB) so the NVIDIA driver's own libcuda.so.1 loads; GPU Lab does not fall back to the CPU silently for this",
        path.map(|p| format!(" ({p})")).unwrap_or_default()
    )
}

/// The file the driver API was loaded from, when the loader can tell.
fn driver_path() -> Option<String> {
    // SAFETY: `culib` returns cudarc's already-loaded driver library (driver_present
    // succeeded); only the address of `cuInit` is taken, to ask which file holds it.
    let address = guarded(|| unsafe {
        cudarc::driver::sys::culib()
            .get::<*mut c_void>(b"cuInit\0")
            .ok()
            .map(|s| *s)
    })
    .ok()
    .flatten()?;
    object_containing(address)
}

/// A library found and loaded, and where from.
#[derive(Debug)]
pub struct Loaded {
    /// The open library; dropping it unloads it.
    pub library: libloading::Library,
    /// The file the loader opened (resolved through symlinks when possible).
    pub path: String,
    /// The CUDA major version in its name.
    pub major: u32,
    /// Libraries it opens by bare name at run time, loaded from its own folder first
    /// (NVRTC's `libnvrtc-builtins.so.13.0`), so it works without `LD_LIBRARY_PATH`.
    pub companions: Vec<libloading::Library>,
}

/// The CUDA version the driver supports, as `major`, or `None` without a driver.
pub fn driver_major() -> Option<u32> {
    driver_version().map(|v| v / 1000)
}

/// The CUDA version the driver supports (`12020` for 12.2), or `None` without a driver.
pub fn driver_version() -> Option<u32> {
    if !driver_present() {
        return None;
    }
    let mut version = 0i32;
    // SAFETY: cuDriverGetVersion writes one int to the pointer, which points at
    // `version`; it needs no cuInit and no context.
    let status =
        guarded(|| unsafe { cudarc::driver::sys::cuDriverGetVersion(&raw mut version) }).ok()?;
    (status == cudarc::driver::sys::CUresult::CUDA_SUCCESS && version > 0)
        .then(|| u32::try_from(version).ok())
        .flatten()
}

/// The majors to try, newest first: none newer than the driver's (a CUDA 13 library
/// needs a CUDA 13 driver), all of them when there is no driver to ask, and not 13 for
/// a GPU older than [`OLDEST_SM_CUDA_13`] (`device_sm`, e.g. 70 for a V100).
/// `forced` (`GPULAB_CUDA_MAJOR`) names the only one to try.
pub fn majors_for(
    driver_major: Option<u32>,
    device_sm: Option<u32>,
    forced: Option<u32>,
) -> Result<Vec<u32>, String> {
    if let Some(forced) = forced {
        if !SUPPORTED_MAJORS.contains(&forced) {
            return Err(format!(
                "GPULAB_CUDA_MAJOR={forced}: GPU Lab uses CUDA 12 or 13"
            ));
        }
        if let Some(d) = driver_major.filter(|d| forced > *d) {
            return Err(format!(
                "GPULAB_CUDA_MAJOR={forced}, but this driver supports CUDA {d}: CUDA {forced}'s libraries cannot run on it"
            ));
        }
        return Ok(vec![forced]);
    }
    if let Some(d) = driver_major.filter(|d| *d < OLDEST_MAJOR) {
        return Err(format!(
            "this driver supports CUDA {d}, older than CUDA {OLDEST_MAJOR}, the oldest GPU Lab's libraries run on: update the NVIDIA driver to R525 or newer"
        ));
    }
    Ok(SUPPORTED_MAJORS
        .into_iter()
        .filter(|m| driver_major.is_none_or(|d| *m <= d))
        .filter(|m| *m != 13 || device_sm.is_none_or(|sm| sm >= OLDEST_SM_CUDA_13))
        .collect())
}

/// `GPULAB_CUDA_MAJOR`, parsed: `None` when unset or empty.
pub fn forced_major() -> Result<Option<u32>, String> {
    match std::env::var("GPULAB_CUDA_MAJOR") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("GPULAB_CUDA_MAJOR={v:?}: expected 12 or 13")),
        _ => Ok(None),
    }
}

/// Device 0's architecture as an `sm` number (90 for 9.0), asked of the driver before
/// any context exists, or `None` without a driver or a device.
pub fn device_sm() -> Option<u32> {
    use cudarc::driver::{result, sys::CUdevice_attribute as A};
    if require_driver().is_err() {
        return None;
    }
    guarded(|| -> Option<u32> {
        result::init().ok()?;
        let device = result::device::get(0).ok()?;
        // SAFETY: `device` is a valid handle from cuDeviceGet; each call writes one int.
        let (major, minor) = unsafe {
            (
                result::device::get_attribute(
                    device,
                    A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                )
                .ok()?,
                result::device::get_attribute(
                    device,
                    A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                )
                .ok()?,
            )
        };
        u32::try_from(major * 10 + minor).ok()
    })
    .ok()
    .flatten()
}

/// Folders named by `GPULAB_CUDA_LIB` (`:`-separated), when set and not empty.
fn pinned_dirs() -> Option<Vec<PathBuf>> {
    let list = std::env::var("GPULAB_CUDA_LIB").ok()?;
    let dirs: Vec<PathBuf> = list
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    (!dirs.is_empty()).then_some(dirs)
}

/// Where toolkits and pip wheels usually put `library` for `major`, beyond the
/// loader's own path, in search order ([`search_path`]).
pub fn usual_dirs(library: Library, major: u32, env: &SearchEnv) -> Vec<PathBuf> {
    let mut dirs = search_path::toolkit_dirs(env, major);
    dirs.extend(
        search_path::site_packages(env)
            .into_iter()
            .map(|packages| packages.join(library.wheel_dir(major))),
    );
    dirs.retain(|d| d.is_dir());
    dirs
}

/// Finds and loads the newest usable `library` (NVRTC or cuBLAS) for a driver that
/// supports CUDA `driver_major`, on a device of architecture `device_sm`.
pub fn open(
    library: Library,
    driver_major: Option<u32>,
    device_sm: Option<u32>,
) -> Result<Loaded, GpuError> {
    let unusable = |why: String| GpuError::Unsupported(format!("{}: {why}", library.file_name()));
    let forced = forced_major().map_err(unusable)?;
    let majors = majors_for(driver_major, device_sm, forced).map_err(unusable)?;
    let pinned = pinned_dirs();
    let env = SearchEnv::current();
    let mut names = Vec::new();
    let mut searched: Vec<String> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    for &major in &majors {
        let name = format!("{}.{major}", library.file_name());
        let places: Vec<Option<PathBuf>> = match &pinned {
            Some(dirs) => dirs.iter().cloned().map(Some).collect(),
            None => std::iter::once(None)
                .chain(usual_dirs(library, major, &env).into_iter().map(Some))
                .collect(),
        };
        for place in places {
            let candidate = place
                .as_ref()
                .map_or(PathBuf::from(&name), |d| d.join(&name));
            let where_ = place.map_or(
                "the loader's path (LD_LIBRARY_PATH, ldconfig)".into(),
                |d| d.display().to_string(),
            );
            if !searched.contains(&where_) {
                searched.push(where_);
            }
            match load(&candidate) {
                Ok(library) => {
                    let path = resolved_path(&library, &candidate);
                    let companions =
                        companions(Path::new(&path), &format!("libnvrtc-builtins.so.{major}."));
                    return Ok(Loaded {
                        library,
                        path,
                        major,
                        companions,
                    });
                }
                Err(dlerror) => {
                    if let Some(refusal) = refusal(&candidate, &dlerror) {
                        refusals.push(refusal);
                    }
                }
            }
        }
        names.push(name);
    }
    let why_not_13 = match (forced, driver_major, device_sm) {
        _ if majors.contains(&13) => String::new(),
        (Some(f), _, _) => format!(" (GPULAB_CUDA_MAJOR={f})"),
        (None, Some(d), _) if d < 13 => format!(
            " (this driver supports CUDA {d}, so {}.13 would not run on it)",
            library.file_name()
        ),
        (None, _, Some(sm)) => format!(
            " (this GPU is sm_{sm}, older than CUDA 13's oldest, sm_{OLDEST_SM_CUDA_13}, so the CUDA 12 set is used)"
        ),
        _ => String::new(),
    };
    let refused = if refusals.is_empty() {
        String::new()
    } else {
        format!("; found but not loadable: {}", refusals.join("; "))
    };
    Err(GpuError::Missing {
        library: library.file_name(),
        hint: format!(
            "tried {} in {}{why_not_13}{refused}; {}",
            names.join(" and "),
            searched.join(", "),
            library.install_hint()
        ),
    })
}

/// The loader's complaint about `candidate`, worth showing when the file is there (a
/// wrong architecture, a missing dependency, a broken symlink): `dlerror`'s own text.
/// A bare name that is simply not on the loader's path says nothing new.
fn refusal(candidate: &Path, dlerror: &str) -> Option<String> {
    let exists = candidate.is_absolute() && candidate.symlink_metadata().is_ok();
    let bare_but_found = !candidate.is_absolute() && !dlerror.contains("No such file");
    (exists || bare_but_found).then(|| format!("{}: {dlerror}", candidate.display()))
}

/// Loads the files beside `path` whose names start with `prefix` (NVRTC's builtins),
/// so that NVRTC's own `dlopen` of them by bare name finds them already loaded.
fn companions(path: &Path, prefix: &str) -> Vec<libloading::Library> {
    let Some(Ok(entries)) = path.parent().map(std::fs::read_dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .filter_map(|e| load(&e.path()).ok())
        .collect()
}

/// `dlopen`s `path`, or the loader's error text (`dlerror`) when it cannot.
fn load(path: &Path) -> Result<libloading::Library, String> {
    // SAFETY: loading runs the library's initialisers; NVRTC and cuBLAS have none that
    // depend on state of ours, and nothing from the library is called here.
    guarded(|| unsafe { libloading::Library::new(path) })
        .map_err(|e| e.to_string())?
        .map_err(|e| dlerror_text(&e))
}

/// The loader's own words: libloading says "dlopen failed" and keeps `dlerror`'s
/// text (the file, and why) as the error's source.
fn dlerror_text(error: &libloading::Error) -> String {
    std::error::Error::source(error).map_or_else(|| error.to_string(), ToString::to_string)
}

/// The file the loader actually opened for `library` (asked of the loader with
/// `dladdr` on one of its symbols), or `candidate` when it cannot tell.
fn resolved_path(library: &libloading::Library, candidate: &Path) -> String {
    let from_loader = ["nvrtcVersion", "cublasGetProperty"]
        .into_iter()
        .find_map(|symbol| {
            // SAFETY: only the symbol's address is taken, to ask the loader which file
            // it lies in; nothing is called through it.
            let address: *mut c_void = unsafe { library.get::<*mut c_void>(symbol.as_bytes()) }
                .ok()
                .map(|s| *s)?;
            object_containing(address)
        });
    from_loader.unwrap_or_else(|| candidate.display().to_string())
}

/// The path of the loaded object that contains `address`.
fn object_containing(address: *mut c_void) -> Option<String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`; dli_fname, when
    // set, points at a NUL-terminated string owned by the loader that lives as long
    // as the object stays loaded (it is copied out at once).
    let found = unsafe { libc::dladdr(address, &raw mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: checked non-null above; see the SAFETY note on dladdr.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let path = PathBuf::from(name.as_ref());
    Some(
        std::fs::canonicalize(&path)
            .unwrap_or(path)
            .display()
            .to_string(),
    )
}

/// Runs `f`, turning a panic (cudarc's way of reporting a missing symbol or library)
/// into [`GpuError::Panicked`] with the panic's message.
pub fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, GpuError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        GpuError::Panicked(
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "no message".to_string()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_a_library_newer_than_the_driver() {
        assert_eq!(majors_for(None, None, None).unwrap(), vec![13, 12]);
        assert_eq!(majors_for(Some(13), None, None).unwrap(), vec![13, 12]);
        assert_eq!(majors_for(Some(12), None, None).unwrap(), vec![12]);
        let e = majors_for(Some(11), None, None).unwrap_err();
        assert!(e.contains("supports CUDA 11") && e.contains("R525"), "{e}");
    }

    #[test]
    fn a_gpu_older_than_cuda_13s_oldest_arch_gets_the_cuda_12_set() {
        assert_eq!(
            majors_for(Some(13), Some(70), None).unwrap(),
            vec![12],
            "V100"
        );
        assert_eq!(
            majors_for(Some(13), Some(61), None).unwrap(),
            vec![12],
            "P100"
        );
        assert_eq!(
            majors_for(Some(13), Some(75), None).unwrap(),
            vec![13, 12],
            "T4"
        );
        assert_eq!(
            majors_for(Some(13), Some(90), None).unwrap(),
            vec![13, 12],
            "H100"
        );
    }

    #[test]
    fn gpulab_cuda_major_forces_one_set_or_says_why_it_cannot() {
        assert_eq!(majors_for(Some(13), Some(90), Some(12)).unwrap(), vec![12]);
        assert_eq!(majors_for(None, None, Some(13)).unwrap(), vec![13]);
        let e = majors_for(Some(12), Some(90), Some(13)).unwrap_err();
        assert!(e.contains("supports CUDA 12"), "{e}");
        let e = majors_for(Some(13), None, Some(11)).unwrap_err();
        assert!(e.contains("12 or 13"), "{e}");
    }

    #[test]
    fn the_install_hint_names_the_runtime_wheel_and_warns_about_cu13_names() {
        let hint = Library::Nvrtc.install_hint();
        assert!(
            hint.contains("pip install nvidia-cuda-nvrtc nvidia-cuda-runtime"),
            "{hint}"
        );
        assert!(
            hint.contains("nvidia-*-cu13") && hint.contains("placeholders"),
            "{hint}"
        );
        assert!(hint.contains("nvidia-cuda-runtime-cu12"), "{hint}");
        assert!(hint.contains("GPULAB_CUDA_MAJOR"), "{hint}");
    }

    #[test]
    fn a_stub_is_named_as_one() {
        let text = stub_message(Some("/usr/local/cuda/lib64/stubs/libcuda.so"));
        assert!(
            text.contains("is a stub") && text.contains("error 34"),
            "{text}"
        );
        assert!(
            text.contains("/usr/local/cuda/lib64/stubs/libcuda.so"),
            "{text}"
        );
    }

    #[test]
    fn the_loaders_own_error_is_kept_for_a_file_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let broken = dir.path().join("libnvrtc.so.13");
        std::fs::write(&broken, b"not an ELF file").unwrap();
        let dlerror = load(&broken).map(|_| ()).unwrap_err();
        let kept = refusal(&broken, &dlerror).unwrap();
        assert!(
            kept.contains("libnvrtc.so.13") && kept.contains(&dlerror),
            "{kept}"
        );
        assert!(!dlerror.is_empty());
        let absent = dir.path().join("libcublas.so.13");
        let dlerror = load(&absent).map(|_| ()).unwrap_err();
        assert_eq!(
            refusal(&absent, &dlerror),
            None,
            "a missing file adds nothing"
        );
    }

    #[test]
    fn a_failed_search_names_what_it_tried_and_where_the_wheels_go() {
        let Err(error) = open(Library::Cublas, Some(12), None).map(|l| l.path) else {
            return; // this machine has cuBLAS 12: nothing to report
        };
        let text = error.to_string();
        assert!(text.starts_with("libcublas.so not found"), "{text}");
        assert!(text.contains("libcublas.so.12"), "{text}");
        assert!(!text.contains("tried libcublas.so.13"), "{text}");
        assert!(text.contains("this driver supports CUDA 12"), "{text}");
        assert!(text.contains("nvidia/cublas/lib"), "{text}");
        assert!(text.contains("nvidia/cu13/lib"), "{text}");
    }

    #[test]
    fn presence_checks_never_panic() {
        if let Err(e) = require_driver() {
            assert!(e.to_string().starts_with("libcuda.so not found"), "{e}");
        }
        for library in [Library::Nvrtc, Library::Cublas] {
            if let Err(e) = open(library, driver_major(), None) {
                assert!(e.to_string().starts_with(library.file_name()), "{e}");
            }
        }
        assert_eq!(guarded(|| 2 + 2).unwrap(), 4);
        assert!(
            guarded(|| -> u8 { panic!("boom") })
                .unwrap_err()
                .to_string()
                .contains("boom")
        );
    }
}
