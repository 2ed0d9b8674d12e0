//! The operating system's loader, the two things [`loader`] asks of it that differ by
//! OS: open a library file, and say which file holds a loaded address (so "loaded from"
//! names the real file, not the name that was asked for).
//!
//! - Linux and macOS: `dlopen` through libloading, and `dladdr`.
//! - Windows: `LoadLibraryExW`, with a full path told to look for the library's own
//!   dependencies in its own folder first (`LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR`:
//!   `cublas64_12.dll` needs the `cublasLt64_12.dll` beside it, and a wheel's folder
//!   is on no search path); `GetModuleHandleExW` and `GetModuleFileNameW` for the file.
//!
//! [`loader`]: super::loader

use std::ffi::c_void;
use std::path::Path;

/// Opens the library at `path` (a bare name: on the loader's own path), or the
/// loader's error text (`dlerror`, or Windows' message and code) when it cannot. A
/// panic while loading is reported as an error too (as `loader::guarded` does; not
/// called from here, so that this module imports nothing of the loader's).
pub(super) fn load(path: &Path) -> Result<libloading::Library, String> {
    std::panic::catch_unwind(|| open(path))
        .map_err(|_| format!("loading {} panicked", path.display()))?
        .map_err(|e| loader_error_text(&e))
}

#[cfg(unix)]
fn open(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: loading runs the library's initialisers; NVRTC and cuBLAS have none that
    // depend on state of ours, and nothing from the library is called here.
    unsafe { libloading::Library::new(path) }
}

#[cfg(windows)]
fn open(path: &Path) -> Result<libloading::Library, libloading::Error> {
    use libloading::os::windows::{
        LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR, Library,
    };
    if path.is_absolute() {
        // SAFETY: as on Unix: the initialisers of NVRTC and cuBLAS depend on nothing
        // of ours; the flags only widen where its dependencies are looked for.
        unsafe {
            Library::load_with_flags(
                path,
                LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS,
            )
        }
        .map(Into::into)
    } else {
        // SAFETY: as above; a bare name takes the standard search (System32, PATH).
        unsafe { Library::new(path) }.map(Into::into)
    }
}

/// The loader's own words: libloading says "dlopen failed" (or "LoadLibraryExW
/// failed") and keeps the loader's text (the file, and why) as the error's source.
fn loader_error_text(error: &libloading::Error) -> String {
    std::error::Error::source(error).map_or_else(|| error.to_string(), ToString::to_string)
}

/// The path of the loaded file that contains `address`.
#[cfg(unix)]
pub(super) fn object_containing(address: *mut c_void) -> Option<String> {
    use std::ffi::CStr;
    use std::path::PathBuf;
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

/// The path of the loaded module that contains `address` (already a full path on
/// Windows, so not canonicalised into the `\\?\` form).
#[cfg(windows)]
pub(super) fn object_containing(address: *mut c_void) -> Option<String> {
    use std::os::windows::ffi::OsStringExt;
    use windows_sys::Win32::System::LibraryLoader::{
        GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS, GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
        GetModuleFileNameW, GetModuleHandleExW,
    };
    let mut module = std::ptr::null_mut();
    // SAFETY: with FROM_ADDRESS the "name" argument is read as an address inside a
    // module, never dereferenced as a string; UNCHANGED_REFCOUNT takes no reference
    // (the module stays loaded through the libloading handle that gave the address);
    // the call writes one handle to `module`.
    let found = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
            address.cast::<u16>().cast_const(),
            &raw mut module,
        )
    };
    if found == 0 || module.is_null() {
        return None;
    }
    let mut name = vec![0u16; 32_768];
    let capacity = u32::try_from(name.len()).unwrap_or(u32::MAX);
    // SAFETY: writes at most `capacity` UTF-16 units into `name`, which has that many,
    // and returns how many it wrote (0 on failure).
    let written = unsafe { GetModuleFileNameW(module, name.as_mut_ptr(), capacity) };
    let written = usize::try_from(written).ok().filter(|n| *n > 0)?;
    Some(
        std::ffi::OsString::from_wide(&name[..written])
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_names_the_file_that_holds_an_address_and_keeps_its_own_error() {
        // A function of this test binary lies in the binary itself.
        let here = object_containing(
            the_loader_names_the_file_that_holds_an_address_and_keeps_its_own_error as *mut c_void,
        )
        .expect("the loader knows this binary");
        let exe = std::env::current_exe().unwrap();
        let stem = exe.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(here.contains(&stem), "{here} is not {}", exe.display());
        let dir = tempfile::tempdir().unwrap();
        let broken = dir.path().join("not-a-library.dll");
        std::fs::write(&broken, b"neither ELF nor PE").unwrap();
        let error = load(&broken).map(|_| ()).unwrap_err();
        assert!(!error.is_empty());
        assert!(load(&dir.path().join("absent.dll")).is_err());
    }
}
