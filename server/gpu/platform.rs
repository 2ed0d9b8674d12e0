//! What the NVIDIA libraries are called, and where their installers put them, on each
//! operating system GPU Lab is built for, as data: pure functions of an [`Os`], so the
//! Windows and macOS rules are unit-tested on Linux (and the Windows build checks them
//! again under Wine, `tests/platforms/`).
//!
//! - **Linux** (x86-64 and aarch64 alike: a GH200 or Jetson has the same names, and
//!   NVIDIA's aarch64 "sbsa" wheels the same folders): `libcuda.so.1` from the driver,
//!   `libnvrtc.so.13`/`.12` and `libcublas.so.13`/`.12` from a toolkit or the wheels.
//! - **Windows**: `nvcuda.dll` and `nvml.dll` from the driver (in `System32`),
//!   `nvrtc64_130_0.dll`/`nvrtc64_120_0.dll` (one name per major: `_120_0` serves every
//!   12.x) with `nvrtc-builtins64_<major><minor>.dll` beside it, and
//!   `cublas64_13.dll`/`cublas64_12.dll` with `cublasLt64_<major>.dll` beside it — in
//!   the toolkit's `bin` (`bin\x64` from CUDA 13 on), or the wheels' `nvidia\cuda_nvrtc\bin`
//!   and `nvidia\cublas\bin` (CUDA 12) and `nvidia\cu13\bin\x86_64` (CUDA 13), as the
//!   nvidia-cuda-nvrtc 12.9.86 and 13.0.88 `win_amd64` wheels lay them out.
//! - **macOS**: no CUDA at all (NVIDIA's last macOS driver was CUDA 10.2, for Intel
//!   Macs; Apple silicon has no NVIDIA GPU), so nothing is searched and every
//!   experiment runs on the CPU, which is said once, plainly.

/// The NVIDIA libraries GPU Lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// The CUDA driver API (`libcuda.so.1`, `nvcuda.dll`), installed with the driver.
    Driver,
    /// The runtime compiler (`libnvrtc.so.13` / `.12`, `nvrtc64_130_0.dll` /
    /// `nvrtc64_120_0.dll`), from the toolkit or a pip wheel.
    Nvrtc,
    /// cuBLAS (`libcublas.so.13` / `.12`, `cublas64_13.dll` / `cublas64_12.dll`), from
    /// the toolkit or a pip wheel.
    Cublas,
}

/// An operating system whose library names and places GPU Lab knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux, any architecture.
    Linux,
    /// Windows (x86-64).
    Windows,
    /// macOS, Apple silicon or Intel: no CUDA.
    MacOs,
}

impl Os {
    /// The system this binary was built for.
    pub const CURRENT: Self = if cfg!(windows) {
        Self::Windows
    } else if cfg!(target_os = "macos") {
        Self::MacOs
    } else {
        Self::Linux
    };

    /// Whether NVIDIA ships CUDA for it.
    pub fn has_cuda(self) -> bool {
        self != Self::MacOs
    }

    /// How a bare file name is looked up, for "tried … in …" messages.
    pub fn loader_path(self) -> &'static str {
        match self {
            Self::Linux => "the loader's path (LD_LIBRARY_PATH, ldconfig)",
            Self::Windows => "the DLL search path (the program's folder, System32, PATH)",
            Self::MacOs => "the loader's path (DYLD_LIBRARY_PATH)",
        }
    }

    /// Whether a loader error for a bare name just means "not on the path" (which adds
    /// nothing to "not found"), rather than a file that is there and would not load.
    pub fn means_absent(self, loader_error: &str) -> bool {
        match self {
            // ERROR_MOD_NOT_FOUND (126); a missing dependency of a file that exists
            // says the same, which is why absolute paths are judged by existence.
            Self::Windows => loader_error.contains("os error 126"),
            Self::Linux | Self::MacOs => {
                loader_error.contains("No such file") || loader_error.contains("image not found")
            }
        }
    }

    /// NVML's library, in the order to try: nvml-wrapper's default name first.
    pub fn nvml_candidates(self, program_files: Option<&str>) -> Vec<String> {
        match self {
            // System32 since the R418 DCH drivers; NVSMI beside nvidia-smi before.
            Self::Windows => std::iter::once("nvml.dll".to_string())
                .chain(program_files.map(|p| format!(r"{p}\NVIDIA Corporation\NVSMI\nvml.dll")))
                .collect(),
            Self::Linux => vec!["libnvidia-ml.so.1".into(), "libnvidia-ml.so".into()],
            Self::MacOs => Vec::new(),
        }
    }
}

impl Library {
    /// The pip package that provides it for `major`.
    pub fn wheel(self, major: u32) -> &'static str {
        match (self, major) {
            (Self::Nvrtc, 12) => "nvidia-cuda-nvrtc-cu12",
            (Self::Cublas, 12) => "nvidia-cublas-cu12",
            (Self::Nvrtc, _) => "nvidia-cuda-nvrtc",
            _ => "nvidia-cublas",
        }
    }

    /// The file name without a version, as a newcomer on `os` would look for it.
    pub fn name_on(self, os: Os) -> &'static str {
        match (os, self) {
            (Os::Windows, Self::Driver) => "nvcuda.dll",
            (Os::Windows, Self::Nvrtc) => "nvrtc64_*.dll",
            (Os::Windows, Self::Cublas) => "cublas64_*.dll",
            (Os::MacOs, Self::Driver) => "libcuda.dylib",
            (Os::MacOs, Self::Nvrtc) => "libnvrtc.dylib",
            (Os::MacOs, Self::Cublas) => "libcublas.dylib",
            (Os::Linux, Self::Driver) => "libcuda.so",
            (Os::Linux, Self::Nvrtc) => "libnvrtc.so",
            (Os::Linux, Self::Cublas) => "libcublas.so",
        }
    }

    /// The file that holds CUDA `major`'s copy on `os`.
    pub fn versioned_name(self, os: Os, major: u32) -> String {
        match (os, self) {
            (Os::Windows, Self::Driver) => "nvcuda.dll".into(),
            (Os::Windows, Self::Nvrtc) => format!("nvrtc64_{major}0_0.dll"),
            (Os::Windows, Self::Cublas) => format!("cublas64_{major}.dll"),
            (Os::Linux, Self::Driver) => "libcuda.so.1".into(),
            (Os::Linux, _) => format!("{}.{major}", self.name_on(os)),
            (Os::MacOs, _) => self.name_on(os).into(),
        }
    }

    /// Files beside it that it opens by bare name at run time (NVRTC's builtins), as
    /// the start of their names: loaded first, from its own folder, they are found
    /// without the folder being on the loader's path.
    pub fn companion_prefix(self, os: Os, major: u32) -> Option<String> {
        match (os, self) {
            (Os::Linux, Self::Nvrtc) => Some(format!("libnvrtc-builtins.so.{major}.")),
            (Os::Windows, Self::Nvrtc) => Some(format!("nvrtc-builtins64_{major}")),
            _ => None,
        }
    }

    /// The folder (below `site-packages`) where NVIDIA's pip wheel for `major` puts it
    /// on `os`.
    pub fn wheel_dir_on(self, os: Os, major: u32) -> &'static str {
        match (os, self, major) {
            (Os::Windows, Self::Nvrtc, 12) => "nvidia/cuda_nvrtc/bin",
            (Os::Windows, Self::Cublas, 12) => "nvidia/cublas/bin",
            (Os::Windows, _, _) => "nvidia/cu13/bin/x86_64",
            (_, Self::Nvrtc, 12) => "nvidia/cuda_nvrtc/lib",
            (_, Self::Cublas, 12) => "nvidia/cublas/lib",
            _ => "nvidia/cu13/lib",
        }
    }

    /// What to install on `os` when the library is missing.
    pub fn install_hint_on(self, os: Os) -> String {
        match (os, self) {
            (Os::MacOs, _) => "macOS has no CUDA (NVIDIA's last macOS driver was CUDA 10.2, for Intel Macs; Apple silicon has no NVIDIA GPU), so every experiment runs on this Mac's CPU; for the GPU experiments, run GPU Lab on a Linux or Windows machine with an NVIDIA GPU".to_string(),
            (Os::Windows, Self::Driver) => "no NVIDIA driver is installed (it puts nvcuda.dll in System32): install the GeForce/RTX or data-centre driver for this GPU; under WSL2 use the Linux build, which finds the driver WSL provides".to_string(),
            (Os::Linux, Self::Driver) => "no NVIDIA driver is installed, or this container was started without GPU access (--gpus all / NVIDIA Container Toolkit)".to_string(),
            (_, Self::Nvrtc | Self::Cublas) => format!(
                "install the CUDA toolkit, or the pip wheels matching the driver: CUDA 13 (driver ≥ 580) `pip install {} nvidia-cuda-runtime` (the runtime wheel brings the headers the kernels need) puts {} in site-packages/{} — not the `nvidia-*-cu13` names, which are empty placeholders; CUDA 12 `pip install {} nvidia-cuda-runtime-cu12` puts {} in site-packages/{}; any virtualenv (activated or a `.venv` here or above), {} or Python's own site-packages is searched; or set GPULAB_CUDA_LIB to the folder (GPULAB_CUDA_MAJOR=12 or 13 picks the set)",
                self.wheel(13),
                self.versioned_name(os, 13),
                self.wheel_dir_on(os, 13),
                self.wheel(12),
                self.versioned_name(os, 12),
                self.wheel_dir_on(os, 12),
                if os == Os::Windows { "python.org's and conda's installs" } else { "pyenv" },
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_names_are_those_in_nvidias_windows_wheels_and_toolkit() {
        let w = Os::Windows;
        assert_eq!(Library::Driver.versioned_name(w, 13), "nvcuda.dll");
        assert_eq!(Library::Nvrtc.versioned_name(w, 12), "nvrtc64_120_0.dll");
        assert_eq!(Library::Nvrtc.versioned_name(w, 13), "nvrtc64_130_0.dll");
        assert_eq!(Library::Cublas.versioned_name(w, 12), "cublas64_12.dll");
        assert_eq!(Library::Cublas.versioned_name(w, 13), "cublas64_13.dll");
        // nvidia-cuda-nvrtc-cu12 12.9.86 and nvidia-cuda-nvrtc 13.0.88, win_amd64:
        // nvidia/cuda_nvrtc/bin/nvrtc-builtins64_129.dll, nvidia/cu13/bin/x86_64/nvrtc-builtins64_130.dll.
        let builtins12 = Library::Nvrtc.companion_prefix(w, 12).unwrap();
        let builtins13 = Library::Nvrtc.companion_prefix(w, 13).unwrap();
        assert!("nvrtc-builtins64_129.dll".starts_with(&builtins12));
        assert!("nvrtc-builtins64_130.dll".starts_with(&builtins13));
        assert!(!"nvrtc-builtins64_130.dll".starts_with(&builtins12));
        assert_eq!(Library::Nvrtc.wheel_dir_on(w, 12), "nvidia/cuda_nvrtc/bin");
        assert_eq!(Library::Cublas.wheel_dir_on(w, 12), "nvidia/cublas/bin");
        assert_eq!(Library::Nvrtc.wheel_dir_on(w, 13), "nvidia/cu13/bin/x86_64");
        assert_eq!(
            w.nvml_candidates(Some(r"C:\Program Files")),
            [
                "nvml.dll",
                r"C:\Program Files\NVIDIA Corporation\NVSMI\nvml.dll"
            ]
        );
        assert!(w.means_absent(
            "LoadLibraryExW failed: The specified module could not be found. (os error 126)"
        ));
        let hint = Library::Nvrtc.install_hint_on(w);
        assert!(
            hint.contains("nvrtc64_120_0.dll in site-packages/nvidia/cuda_nvrtc/bin"),
            "{hint}"
        );
    }

    #[test]
    fn linux_names_serve_x86_64_and_aarch64_alike() {
        let l = Os::Linux;
        assert_eq!(Library::Driver.versioned_name(l, 13), "libcuda.so.1");
        assert_eq!(Library::Nvrtc.versioned_name(l, 13), "libnvrtc.so.13");
        assert_eq!(Library::Cublas.versioned_name(l, 12), "libcublas.so.12");
        assert_eq!(
            Library::Nvrtc.companion_prefix(l, 13).unwrap(),
            "libnvrtc-builtins.so.13."
        );
        assert_eq!(Library::Nvrtc.wheel_dir_on(l, 12), "nvidia/cuda_nvrtc/lib");
        assert_eq!(Library::Cublas.wheel_dir_on(l, 13), "nvidia/cu13/lib");
        assert!(l.means_absent(
            "libnvrtc.so.13: cannot open shared object file: No such file or directory"
        ));
        assert!(!l.means_absent("libnvrtc.so.13: wrong ELF class: ELFCLASS32"));
        assert_eq!(l.nvml_candidates(None)[0], "libnvidia-ml.so.1");
    }

    #[test]
    fn a_mac_is_told_plainly_that_it_has_no_cuda() {
        let m = Os::MacOs;
        assert!(!m.has_cuda() && Os::Linux.has_cuda() && Os::Windows.has_cuda());
        for library in [Library::Driver, Library::Nvrtc, Library::Cublas] {
            let hint = library.install_hint_on(m);
            assert!(hint.starts_with("macOS has no CUDA"), "{hint}");
            assert!(hint.contains("runs on this Mac's CPU"), "{hint}");
        }
        assert!(m.nvml_candidates(None).is_empty());
    }
}
