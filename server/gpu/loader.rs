//! Loading the NVIDIA libraries at run time, without ever panicking. cudarc loads
//! libcuda, libnvrtc and libcublas lazily and *panics* when one is missing, so every
//! first use is preceded by a presence check, and a panic guard backs that up.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::GpuError;

/// The NVIDIA libraries GPU Lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// The CUDA driver API (`libcuda.so`), installed with the NVIDIA driver.
    Driver,
    /// The runtime compiler (`libnvrtc.so`), from the CUDA toolkit or a pip wheel.
    Nvrtc,
    /// cuBLAS (`libcublas.so`), from the CUDA toolkit or a pip wheel.
    Cublas,
}

impl Library {
    /// The file name a newcomer would look for.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Driver => "libcuda.so",
            Self::Nvrtc => "libnvrtc.so",
            Self::Cublas => "libcublas.so",
        }
    }

    /// What to install when the library is missing.
    pub fn install_hint(self) -> &'static str {
        match self {
            Self::Driver => {
                "no NVIDIA driver is installed, or this container was started without GPU access (--gpus all / NVIDIA Container Toolkit)"
            }
            Self::Nvrtc => {
                "install the CUDA toolkit or the nvidia-cuda-nvrtc-cu12 wheel and add its lib folder to LD_LIBRARY_PATH"
            }
            Self::Cublas => "install the CUDA toolkit or the nvidia-cublas-cu12 wheel",
        }
    }

    /// `Ok` when the library loads, else [`GpuError::Missing`] naming it and the fix.
    pub fn require(self) -> Result<(), GpuError> {
        if self.is_present() {
            Ok(())
        } else {
            Err(GpuError::Missing {
                library: self.file_name(),
                hint: self.install_hint(),
            })
        }
    }

    /// Whether the dynamic loader can find this library.
    pub fn is_present(self) -> bool {
        guarded(|| match self {
            // SAFETY: the presence checks only try `dlopen` on candidate names and drop
            // the handle; they call no function from the library.
            Self::Driver => unsafe { cudarc::driver::sys::is_culib_present() },
            // SAFETY: as above.
            Self::Nvrtc => unsafe { cudarc::nvrtc::sys::is_culib_present() },
            // SAFETY: as above.
            Self::Cublas => unsafe { cudarc::cublas::sys::is_culib_present() },
        })
        .unwrap_or(false)
    }
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
    fn presence_checks_never_panic() {
        for lib in [Library::Driver, Library::Nvrtc, Library::Cublas] {
            let _ = lib.is_present();
        }
        assert_eq!(guarded(|| 2 + 2).unwrap(), 4);
        assert!(
            guarded(|| -> u8 { panic!("boom") })
                .unwrap_err()
                .to_string()
                .contains("boom")
        );
        for lib in [Library::Driver, Library::Nvrtc, Library::Cublas] {
            if let Err(e) = lib.require() {
                assert!(e.to_string().starts_with(lib.file_name()), "{e}");
            }
        }
    }
}
