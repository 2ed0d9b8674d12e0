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
//! searched), then on the loader's path (`LD_LIBRARY_PATH`, ldconfig; on Windows the
//! DLL search path), then in the usual toolkit folders and the NVIDIA pip wheels'
//! folders ([`search_path`]). Each OS's file names and folders are in [`platform`];
//! macOS has no CUDA, which is said instead of searching. A GPU
//! older than CUDA 13's oldest architecture (NVRTC 13.0 compiles for sm_75 and up)
//! gets the CUDA 12 set; `GPULAB_CUDA_MAJOR=12|13` forces one. A failure lists the
//! names and folders tried, the loader's own error (`dlerror`, or Windows') for every
//! file that exists but did not load, and where the wheels put the files.
//!
//! A `libcuda.so` that loads is not yet a driver: the CUDA toolkit ships a stub of it
//! in `lib64/stubs` for linking, and every call into the stub fails with
//! `CUDA_ERROR_STUB_LIBRARY` (34). [`require_driver`] calls `cuInit` to tell the two
//! apart, and says which file is the stub.
//!
//! [`search_path`]: super::search_path
//! [`platform`]: super::platform

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use super::dynload::{load, object_containing};
use super::error::GpuError;
use super::platform::Os;
use super::search_path::{self, SearchEnv};

pub use super::platform::Library;

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
    /// The file name without a version, as a newcomer on this OS would look for it.
    pub fn file_name(self) -> &'static str {
        self.name_on(Os::CURRENT)
    }

    /// The folder (below `site-packages`) where NVIDIA's pip wheel for `major` puts it
    /// on this OS.
    pub fn wheel_dir(self, major: u32) -> &'static str {
        self.wheel_dir_on(Os::CURRENT, major)
    }

    /// What to install on this OS when the library is missing.
    pub fn install_hint(self) -> String {
        self.install_hint_on(Os::CURRENT)
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

/// Folders named by `GPULAB_CUDA_LIB` (separated as `PATH` is: `:`, on Windows `;`),
/// when set and not empty.
fn pinned_dirs() -> Option<Vec<PathBuf>> {
    let list = std::env::var("GPULAB_CUDA_LIB").ok()?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&list)
        .filter(|d| !d.as_os_str().is_empty())
        .collect();
    (!dirs.is_empty()).then_some(dirs)
}

/// Where toolkits and pip wheels usually put `library` for `major` on `env.os`,
/// beyond the loader's own path, in search order ([`search_path`]).
pub fn usual_dirs(library: Library, major: u32, env: &SearchEnv) -> Vec<PathBuf> {
    let mut dirs = search_path::toolkit_dirs(env, major);
    dirs.extend(
        search_path::site_packages(env)
            .into_iter()
            .map(|packages| packages.join(library.wheel_dir_on(env.os, major))),
    );
    dirs.retain(|d| d.is_dir());
    dirs
}

/// Every file to try for `library`, in order, each with the place it stands for in
/// "tried … in …": for each major, the `pinned` folders alone when given, else the
/// loader's own path, then [`usual_dirs`]. A pure function of its arguments (and of
/// which folders exist), so each OS's order is tested anywhere.
pub fn candidates(
    library: Library,
    majors: &[u32],
    pinned: Option<&[PathBuf]>,
    env: &SearchEnv,
) -> Vec<(u32, PathBuf, String)> {
    let mut out = Vec::new();
    for &major in majors {
        let name = library.versioned_name(env.os, major);
        let places: Vec<Option<PathBuf>> = match pinned {
            Some(dirs) => dirs.iter().cloned().map(Some).collect(),
            None => std::iter::once(None)
                .chain(usual_dirs(library, major, env).into_iter().map(Some))
                .collect(),
        };
        for place in places {
            let candidate = place
                .as_ref()
                .map_or(PathBuf::from(&name), |d| d.join(&name));
            let where_ = place.map_or(env.os.loader_path().to_string(), |d| {
                d.display().to_string()
            });
            out.push((major, candidate, where_));
        }
    }
    out
}

/// Finds and loads the newest usable `library` (NVRTC or cuBLAS) for a driver that
/// supports CUDA `driver_major`, on a device of architecture `device_sm`.
pub fn open(
    library: Library,
    driver_major: Option<u32>,
    device_sm: Option<u32>,
) -> Result<Loaded, GpuError> {
    let unusable = |why: String| GpuError::Unsupported(format!("{}: {why}", library.file_name()));
    let env = SearchEnv::current();
    if !env.os.has_cuda() {
        return Err(GpuError::Missing {
            library: library.file_name(),
            hint: library.install_hint(),
        });
    }
    let forced = forced_major().map_err(unusable)?;
    let majors = majors_for(driver_major, device_sm, forced).map_err(unusable)?;
    let pinned = pinned_dirs();
    let mut searched: Vec<String> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    for (major, candidate, where_) in candidates(library, &majors, pinned.as_deref(), &env) {
        if !searched.contains(&where_) {
            searched.push(where_);
        }
        match load(&candidate) {
            Ok(loaded) => {
                let path = resolved_path(&loaded, &candidate);
                let companions = library
                    .companion_prefix(env.os, major)
                    .map(|prefix| companions(Path::new(&path), &prefix))
                    .unwrap_or_default();
                return Ok(Loaded {
                    library: loaded,
                    path,
                    major,
                    companions,
                });
            }
            Err(loader_error) => {
                if let Some(refusal) = refusal(env.os, &candidate, &loader_error) {
                    refusals.push(refusal);
                }
            }
        }
    }
    let names: Vec<String> = majors
        .iter()
        .map(|m| library.versioned_name(env.os, *m))
        .collect();
    let why_not_13 = match (forced, driver_major, device_sm) {
        _ if majors.contains(&13) => String::new(),
        (Some(f), _, _) => format!(" (GPULAB_CUDA_MAJOR={f})"),
        (None, Some(d), _) if d < 13 => format!(
            " (this driver supports CUDA {d}, so {} would not run on it)",
            library.versioned_name(env.os, 13)
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
/// wrong architecture, a missing dependency, a broken symlink): the loader's own text.
/// A bare name that is simply not on the loader's path says nothing new.
fn refusal(os: Os, candidate: &Path, loader_error: &str) -> Option<String> {
    let exists = candidate.is_absolute() && candidate.symlink_metadata().is_ok();
    let bare_but_found = !candidate.is_absolute() && !os.means_absent(loader_error);
    (exists || bare_but_found).then(|| format!("{}: {loader_error}", candidate.display()))
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

/// The file the loader actually opened for `library` (asked of the loader with
/// `dladdr`, or its Windows twin, on one of its symbols), or `candidate` when it
/// cannot tell.
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
#[path = "loader_tests.rs"]
mod tests;
