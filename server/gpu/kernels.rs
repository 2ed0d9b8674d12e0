//! The CUDA kernels in `kernels/`, embedded in the binary and compiled at run time by
//! NVRTC for the device's architecture. `common.cuh` is pasted in place of its
//! `#include`, so NVRTC needs only the CUDA headers (`cuda_fp16.h`, `cuda_bf16.h`),
//! found in `GPULAB_CUDA_INCLUDE`, beside the loaded NVRTC (toolkit or wheel layout),
//! in `CUDA_HOME`/`CUDA_PATH` or in `/usr/local/cuda/include`.
//!
//! What NVRTC compiled is kept for the life of the process, per (NVRTC version,
//! target, file): reopening the GPU (after a reset, or a second worker handle) loads
//! the same binaries again instead of recompiling every file, which takes seconds.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use super::error::GpuError;
use super::loader::guarded;
use super::nvrtc::{self, Binary, Target};

/// The shared header every kernel file includes.
pub const COMMON: &str = include_str!("../../kernels/common.cuh");

/// One kernel source file.
#[derive(Debug, Clone, Copy)]
pub struct KernelFile {
    /// File name in `kernels/`.
    pub name: &'static str,
    /// Its text as embedded at build time.
    pub source: &'static str,
    /// The `extern "C"` entry points it defines.
    pub functions: &'static [&'static str],
}

/// Every kernel file, so tests can compile them all.
pub const FILES: &[KernelFile] = &[
    KernelFile {
        name: "busy.cu",
        source: include_str!("../../kernels/busy.cu"),
        functions: &["busy_f32"],
    },
    KernelFile {
        name: "elementwise.cu",
        source: include_str!("../../kernels/elementwise.cu"),
        functions: &[
            "fill_f32",
            "add_bias_f32",
            "bias_relu_f32",
            "bias_relu_bf16",
            "relu_backward_partials_f32",
            "relu_backward_partials_bf16",
            "relu_f32",
            "relu_bf16",
            "relu_backward_f32",
            "f32_to_bf16",
            "round_bf16_f32",
        ],
    },
    KernelFile {
        name: "loss.cu",
        source: include_str!("../../kernels/loss.cu"),
        functions: &["softmax_xent_f32"],
    },
    KernelFile {
        name: "reduce.cu",
        source: include_str!("../../kernels/reduce.cu"),
        functions: &[
            "column_partial_sums_f32",
            "column_sums_f32",
            "scaled_sum_f32",
        ],
    },
    KernelFile {
        name: "optim.cu",
        source: include_str!("../../kernels/optim.cu"),
        functions: &["sgd_f32", "adam_f32"],
    },
];

/// The file defining `function`, if any.
pub fn file_for(function: &str) -> Option<&'static KernelFile> {
    FILES.iter().find(|f| f.functions.contains(&function))
}

/// The source NVRTC sees: the file with `#include "common.cuh"` replaced by the header.
pub fn full_source(file: &KernelFile) -> String {
    file.source.replace("#include \"common.cuh\"", COMMON)
}

/// Folders that may hold the CUDA headers, in the order they are tried: the ones
/// named in `GPULAB_CUDA_INCLUDE`, then those that come with the NVRTC loaded from
/// `nvrtc_path` (so its headers match its version), then the toolkit's.
pub fn include_paths(nvrtc_path: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    if let Ok(list) = std::env::var("GPULAB_CUDA_INCLUDE") {
        // Separated as PATH is (`:`, on Windows `;`, where `C:\` has a colon).
        paths.extend(
            std::env::split_paths(&list)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| p.display().to_string()),
        );
    }
    if let Some(lib) = Path::new(nvrtc_path).parent() {
        // Toolkit: lib64/../include (Windows: bin/../include, CUDA 13 bin/x64/../../include);
        // cu13 wheel: cu13/lib/../include (Windows: cu13/bin/x86_64/../../include); cu12
        // wheels: cuda_nvrtc/lib/../../cuda_runtime/include (Windows: …/bin/…).
        for beside in ["../include", "../../include", "../../cuda_runtime/include"] {
            paths.push(lib.join(beside).display().to_string());
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(root) = std::env::var(var) {
            paths.push(format!("{root}/include"));
        }
    }
    paths.push("/usr/local/cuda/include".to_string());
    paths
        .into_iter()
        .filter(|p| Path::new(p).join("cuda_fp16.h").exists())
        .collect()
}

/// What identifies one compiled file: NVRTC's version, the target, the file name.
type CacheKey = ((i32, i32), Target, &'static str);

/// Compiled binaries, and how many times each key was compiled (for the tests).
static CACHE: Mutex<Option<HashMap<CacheKey, (Binary, usize)>>> = Mutex::new(None);

/// How many times NVRTC has compiled `file` for `target` in this process.
pub fn compile_count(file: &KernelFile, target: Target) -> usize {
    let Ok(nvrtc) = nvrtc::get() else { return 0 };
    let cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    cache
        .as_ref()
        .and_then(|c| c.get(&(nvrtc.version, target, file.name)))
        .map_or(0, |(_, count)| *count)
}

/// `file` compiled for `target` with the loaded NVRTC: from the process's cache, or
/// compiled now and kept. Errors carry NVRTC's log and are not kept (a fixed header
/// path is picked up by the next try).
pub fn compile(file: &KernelFile, target: Target) -> Result<Binary, GpuError> {
    let nvrtc = nvrtc::get()?;
    let key = (nvrtc.version, target, file.name);
    // Held while compiling: two threads asking for the same file compile it once.
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some((binary, _)) = cache.get(&key) {
        return Ok(binary.clone());
    }
    let binary = compile_uncached(file, target)?;
    let count = cache.get(&key).map_or(0, |(_, c)| *c) + 1;
    cache.insert(key, (binary.clone(), count));
    Ok(binary)
}

/// Compiles `file` for `target` with the loaded NVRTC, always.
fn compile_uncached(file: &KernelFile, target: Target) -> Result<Binary, GpuError> {
    let nvrtc = nvrtc::get()?;
    let includes = include_paths(&nvrtc.path);
    if includes.is_empty() {
        return Err(GpuError::Missing {
            library: "CUDA headers (cuda_fp16.h)",
            hint: "set GPULAB_CUDA_INCLUDE to a CUDA include folder (the toolkit's include/, or site-packages/nvidia/cu13/include from the nvidia-cuda-runtime wheel)".to_string(),
        });
    }
    let mut options = vec!["--std=c++17".to_string()];
    options.extend(includes.iter().map(|dir| format!("--include-path={dir}")));
    let source = full_source(file);
    guarded(|| nvrtc.compile(&source, file.name, target, &options))?
}

/// Compiles every file for `target`: what the doctor and the start-up check prove.
pub fn compile_all(target: Target) -> Result<Vec<(&'static str, Binary)>, GpuError> {
    FILES
        .iter()
        .map(|file| compile(file, target).map(|binary| (file.name, binary)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_file_is_registered_with_its_functions() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".cu"))
            .collect();
        on_disk.sort();
        let mut registered: Vec<String> = FILES.iter().map(|f| f.name.to_string()).collect();
        registered.sort();
        assert_eq!(on_disk, registered, "add new .cu files to kernels::FILES");
        for file in FILES {
            for function in file.functions {
                assert!(
                    file.source.contains(&format!("void {function}(")),
                    "{} lacks {function}",
                    file.name
                );
            }
            assert!(!full_source(file).contains("#include \"common.cuh\""));
        }
        assert_eq!(file_for("relu_bf16").unwrap().name, "elementwise.cu");
    }

    #[test]
    fn a_second_request_for_the_same_file_and_target_is_not_recompiled() {
        if nvrtc::get().is_err() {
            assert!(
                std::env::var("GPULAB_REQUIRE_NVRTC").is_err(),
                "GPULAB_REQUIRE_NVRTC is set but NVRTC does not load"
            );
            eprintln!(
                "SKIPPED: no NVRTC on the loader's path (tests/run.sh puts the wheels there)"
            );
            return;
        }
        // sm_86, loss.cu: a pair no other test compiles, so the count is this test's.
        let file = FILES.iter().find(|f| f.name == "loss.cu").unwrap();
        let target = Target::Cubin(86);
        let first = compile(file, target).unwrap();
        assert_eq!(compile_count(file, target), 1);
        let second = compile(file, target).unwrap();
        assert_eq!(compile_count(file, target), 1, "the second open recompiled");
        assert_eq!(first, second);
        // Another target is another key.
        let ptx = compile(file, Target::Ptx(86)).unwrap();
        assert!(matches!(ptx, Binary::Ptx(_)));
        assert_eq!(compile_count(file, Target::Ptx(86)), 1);
    }
}
