//! Tests of [`super`]: which CUDA majors are tried, what a failed search says, and
//! the order of the files tried on Linux and on Windows.

use super::*;
use crate::gpu::platform::Os;

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
    let kept = refusal(Os::CURRENT, &broken, &dlerror).unwrap();
    assert!(
        kept.contains("libnvrtc.so.13") && kept.contains(&dlerror),
        "{kept}"
    );
    assert!(!dlerror.is_empty());
    let absent = dir.path().join("libcublas.so.13");
    let dlerror = load(&absent).map(|_| ()).unwrap_err();
    assert_eq!(
        refusal(Os::CURRENT, &absent, &dlerror),
        None,
        "a missing file adds nothing"
    );
}

#[cfg(not(target_os = "macos"))] // a Mac is told it has no CUDA instead
#[test]
fn a_failed_search_names_what_it_tried_and_where_the_wheels_go() {
    let Err(error) = open(Library::Cublas, Some(12), None).map(|l| l.path) else {
        return; // this machine has cuBLAS 12: nothing to report
    };
    let text = error.to_string();
    let (os, cublas) = (Os::CURRENT, Library::Cublas);
    assert!(
        text.starts_with(&format!("{} not found", cublas.file_name())),
        "{text}"
    );
    assert!(text.contains(&cublas.versioned_name(os, 12)), "{text}");
    assert!(
        !text.contains(&format!("tried {}", cublas.versioned_name(os, 13))),
        "{text}"
    );
    assert!(text.contains("this driver supports CUDA 12"), "{text}");
    assert!(text.contains(cublas.wheel_dir(12)), "{text}");
    assert!(text.contains(cublas.wheel_dir(13)), "{text}");
}

#[test]
fn presence_checks_never_panic() {
    if let Err(e) = require_driver() {
        let driver = Library::Driver.file_name();
        assert!(
            e.to_string().starts_with(&format!("{driver} not found")),
            "{e}"
        );
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

#[test]
fn on_windows_nvrtc_is_tried_on_the_dll_path_then_the_toolkit_then_the_wheels() {
    let root = tempfile::tempdir().unwrap();
    let toolkit = root
        .path()
        .join("Program Files/NVIDIA GPU Computing Toolkit/CUDA");
    let toolkit_12 = toolkit.join("v12.9/bin");
    let toolkit_13 = toolkit.join("v13.0/bin/x64");
    let venv = root.path().join("course/.venv/Lib/site-packages");
    let wheel_12 = venv.join("nvidia/cuda_nvrtc/bin");
    let wheel_13 = venv.join("nvidia/cu13/bin/x86_64");
    for dir in [&toolkit_12, &toolkit_13, &wheel_12, &wheel_13] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let env = SearchEnv {
        cwd: Some(root.path().join("course")),
        program_files: Some(root.path().join("Program Files")),
        ..SearchEnv::empty(Os::Windows)
    };
    let tried: Vec<(u32, PathBuf, String)> = candidates(Library::Nvrtc, &[13, 12], None, &env);
    let files: Vec<(u32, PathBuf)> = tried.iter().map(|(m, p, _)| (*m, p.clone())).collect();
    assert_eq!(
        files,
        [
            (13, PathBuf::from("nvrtc64_130_0.dll")),
            (13, toolkit_13.join("nvrtc64_130_0.dll")),
            // bin\x64's parent: CUDA 12's place, searched in a CUDA 13 toolkit too.
            (13, toolkit.join("v13.0/bin/nvrtc64_130_0.dll")),
            (13, wheel_13.join("nvrtc64_130_0.dll")),
            (12, PathBuf::from("nvrtc64_120_0.dll")),
            (12, toolkit_12.join("nvrtc64_120_0.dll")),
            (12, wheel_12.join("nvrtc64_120_0.dll")),
        ]
    );
    assert!(tried[0].2.contains("System32, PATH"), "{}", tried[0].2);
    let pinned = [root.path().join("pinned")];
    let only: Vec<PathBuf> = candidates(Library::Cublas, &[12], Some(&pinned), &env)
        .into_iter()
        .map(|(_, p, _)| p)
        .collect();
    assert_eq!(only, [root.path().join("pinned/cublas64_12.dll")]);
}

#[test]
fn on_linux_aarch64_wheels_are_found_where_x86_64_ones_are() {
    let root = tempfile::tempdir().unwrap();
    let wheel = root
        .path()
        .join("course/.venv/lib/python3.12/site-packages/nvidia/cu13/lib");
    std::fs::create_dir_all(&wheel).unwrap();
    let env = SearchEnv {
        cwd: Some(root.path().join("course")),
        ..SearchEnv::empty(Os::Linux)
    };
    let tried = candidates(Library::Cublas, &[13], None, &env);
    assert_eq!(tried[0].1, PathBuf::from("libcublas.so.13"));
    assert!(tried[0].2.contains("LD_LIBRARY_PATH"));
    assert!(
        tried
            .iter()
            .any(|(_, p, _)| p == &wheel.join("libcublas.so.13")),
        "{tried:?}"
    );
}
