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
//! usual toolkit folders and the NVIDIA pip wheels' folders. A failure lists the names
//! and folders tried and where the wheels put the files.

use std::ffi::{CStr, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use super::error::GpuError;

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
                "install the CUDA toolkit, or the pip wheel matching the driver: CUDA 13 (driver ≥ 580) `pip install {}` puts {}.13 in site-packages/{}; CUDA 12 `pip install {}` puts {}.12 in site-packages/{}; or set GPULAB_CUDA_LIB to the folder",
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

/// `Ok` when the driver library loads, else [`GpuError::Missing`] with the fix.
pub fn require_driver() -> Result<(), GpuError> {
    if driver_present() {
        Ok(())
    } else {
        Err(GpuError::Missing {
            library: Library::Driver.file_name(),
            hint: Library::Driver.install_hint(),
        })
    }
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
/// needs a CUDA 13 driver), all of them when there is no driver to ask.
pub fn majors_for(driver_major: Option<u32>) -> Vec<u32> {
    SUPPORTED_MAJORS
        .into_iter()
        .filter(|m| driver_major.is_none_or(|d| *m <= d))
        .collect()
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
/// loader's own path.
pub fn usual_dirs(library: Library, major: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(root) = std::env::var(var) {
            dirs.push(Path::new(&root).join("lib64"));
        }
    }
    dirs.push(PathBuf::from(format!("/usr/local/cuda-{major}/lib64")));
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let home = std::env::var("HOME").ok().map(|h| format!("{h}/.local"));
    let prefixes = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .into_iter()
        .filter_map(|v| std::env::var(v).ok())
        .chain(home)
        .chain(["/usr/local", "/usr", "/opt/conda"].map(String::from));
    for prefix in prefixes {
        let Ok(entries) = std::fs::read_dir(Path::new(&prefix).join("lib")) else {
            continue;
        };
        for python in entries.flatten() {
            if python.file_name().to_string_lossy().starts_with("python3") {
                for packages in ["site-packages", "dist-packages"] {
                    dirs.push(python.path().join(packages).join(library.wheel_dir(major)));
                }
            }
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs
}

/// Finds and loads the newest usable `library` (NVRTC or cuBLAS) for a driver that
/// supports CUDA `driver_major`.
pub fn open(library: Library, driver_major: Option<u32>) -> Result<Loaded, GpuError> {
    let majors = majors_for(driver_major);
    let pinned = pinned_dirs();
    let mut names = Vec::new();
    let mut searched: Vec<String> = Vec::new();
    for &major in &majors {
        let name = format!("{}.{major}", library.file_name());
        let places: Vec<Option<PathBuf>> = match &pinned {
            Some(dirs) => dirs.iter().cloned().map(Some).collect(),
            None => std::iter::once(None)
                .chain(usual_dirs(library, major).into_iter().map(Some))
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
            if let Some(library) = load(&candidate) {
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
        }
        names.push(name);
    }
    let too_new = match driver_major {
        Some(d) if !majors.contains(&SUPPORTED_MAJORS[0]) => format!(
            " (this driver supports CUDA {d}, so {}.13 would not run on it)",
            library.file_name()
        ),
        _ => String::new(),
    };
    Err(GpuError::Missing {
        library: library.file_name(),
        hint: format!(
            "tried {} in {}{too_new}; {}",
            names.join(" and "),
            searched.join(", "),
            library.install_hint()
        ),
    })
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
        .filter_map(|e| load(&e.path()))
        .collect()
}

/// `dlopen`s `path`, or `None` when the loader cannot.
fn load(path: &Path) -> Option<libloading::Library> {
    // SAFETY: loading runs the library's initialisers; NVRTC and cuBLAS have none that
    // depend on state of ours, and nothing from the library is called here.
    guarded(|| unsafe { libloading::Library::new(path) })
        .ok()?
        .ok()
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
        assert_eq!(majors_for(None), vec![13, 12]);
        assert_eq!(majors_for(Some(13)), vec![13, 12]);
        assert_eq!(majors_for(Some(12)), vec![12]);
        assert!(majors_for(Some(11)).is_empty());
    }

    #[test]
    fn a_failed_search_names_what_it_tried_and_where_the_wheels_go() {
        let Err(error) = open(Library::Cublas, Some(12)).map(|l| l.path) else {
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
            if let Err(e) = open(library, driver_major()) {
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
