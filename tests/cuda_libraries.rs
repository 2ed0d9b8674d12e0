//! One binary, CUDA 12 and CUDA 13: the loader finds and uses each set of NVIDIA
//! libraries when only that set is there, and the C functions GPU Lab calls have the
//! signatures and constants it assumes in both versions' headers. tests/setup.sh
//! installs both pinned sets (NVRTC, the runtime headers, cuBLAS) under target/;
//! with `GPULAB_REQUIRE_NVRTC=1` (tests/run.sh) a missing set fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use gpulab::gpu::cublas;
use serde_json::Value;

use crate::support::repo_path;

/// One set of NVIDIA wheels as pip lays it out.
struct WheelSet {
    major: u32,
    /// The `nvidia/` folder.
    root: PathBuf,
    /// Folders holding libnvrtc and libcublas.
    libs: Vec<PathBuf>,
    /// Folders holding nvrtc.h, cublas_api.h and the runtime headers.
    includes: Vec<PathBuf>,
}

fn sets() -> Option<[WheelSet; 2]> {
    let cu12 = repo_path("target/cuda-wheels/nvidia");
    let cu13 = repo_path("target/cuda-wheels-13/nvidia");
    let sets = [
        WheelSet {
            major: 12,
            libs: vec![cu12.join("cuda_nvrtc/lib"), cu12.join("cublas/lib")],
            includes: [
                "cuda_nvrtc",
                "cublas",
                "cuda_runtime",
                "cuda_nvcc",
                "cuda_cccl",
            ]
            .map(|p| cu12.join(p).join("include"))
            .to_vec(),
            root: cu12,
        },
        WheelSet {
            major: 13,
            libs: vec![cu13.join("cu13/lib")],
            includes: vec![cu13.join("cu13/include")],
            root: cu13,
        },
    ];
    if sets.iter().all(|s| s.libs.iter().all(|d| d.is_dir())) {
        return Some(sets);
    }
    assert!(
        std::env::var("GPULAB_REQUIRE_NVRTC").is_err(),
        "GPULAB_REQUIRE_NVRTC is set but the CUDA 12/13 wheels are not under target/ (run tests/setup.sh)"
    );
    eprintln!("SKIPPED: the CUDA 12/13 wheels are not installed (run tests/setup.sh)");
    None
}

fn joined(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// `gpulab doctor --json` with only `env` telling it where libraries are.
fn doctor(env: &[(&str, String)]) -> Value {
    doctor_in(None, env)
}

/// [`doctor`], run in the working directory `cwd` when given.
fn doctor_in(cwd: Option<&Path>, env: &[(&str, String)]) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpulab"));
    command.args(["doctor", "--json"]);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    for var in [
        "LD_LIBRARY_PATH",
        "GPULAB_CUDA_LIB",
        "GPULAB_CUDA_INCLUDE",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CUDA_HOME",
        "CUDA_PATH",
        "GPULAB_CUDA_MAJOR",
        "PYENV_ROOT",
    ] {
        command.env_remove(var);
    }
    command.env("HOME", home.path());
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The detail of layer `name`, asserting it passed.
fn passed(report: &Value, name: &str) -> String {
    let layer = report["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no layer {name}: {report}"));
    assert_eq!(layer["status"], "ok", "{name}: {layer}");
    layer["detail"].as_str().unwrap().to_string()
}

/// NVRTC and cuBLAS of `set` were loaded from it, and every kernel compiled.
fn uses(report: &Value, set: &WheelSet) {
    // The loader reports the file it opened with symlinks resolved (target/cuda-wheels
    // may itself be a link, as in a worktree seeded from another checkout).
    let root = std::fs::canonicalize(&set.root)
        .unwrap_or_else(|_| set.root.clone())
        .display()
        .to_string();
    let nvrtc = passed(report, "NVRTC loads");
    assert!(
        nvrtc.starts_with(&format!("NVRTC {}.", set.major)),
        "{nvrtc}"
    );
    assert!(nvrtc.contains(&root), "{nvrtc} is not from {root}");
    let kernels = passed(report, "NVRTC compiles every kernel");
    let files = gpulab::gpu::kernels::FILES.len();
    assert!(kernels.starts_with(&format!("{files} files")), "{kernels}");
    let blas = passed(report, "cuBLAS loads");
    assert!(
        blas.starts_with(&format!("cuBLAS {}.", set.major)),
        "{blas}"
    );
    assert!(blas.contains(&root), "{blas} is not from {root}");
}

#[test]
fn each_set_alone_on_the_loader_path_is_found_and_compiles_every_kernel() {
    let Some(sets) = sets() else { return };
    for set in &sets {
        let report = doctor(&[("LD_LIBRARY_PATH", joined(&set.libs))]);
        uses(&report, set);
    }
    // Neither set: the failure names what was tried and where the wheels go.
    let report = doctor(&[]);
    let nvrtc = &report["layers"][3];
    assert_eq!(nvrtc["status"], "failed", "{nvrtc}");
    let detail = nvrtc["detail"].as_str().unwrap();
    for expected in [
        "libnvrtc.so.13",
        "libnvrtc.so.12",
        "nvidia/cu13/lib",
        "nvidia/cuda_nvrtc/lib",
    ] {
        assert!(
            detail.contains(expected),
            "{expected} missing from: {detail}"
        );
    }
}

#[test]
fn gpulab_cuda_lib_pins_a_set_over_the_loader_path() {
    let Some([cu12, cu13]) = sets() else { return };
    let report = doctor(&[
        ("LD_LIBRARY_PATH", joined(&cu13.libs)),
        ("GPULAB_CUDA_LIB", joined(&cu12.libs)),
    ]);
    uses(&report, &cu12);
    let report = doctor(&[
        ("LD_LIBRARY_PATH", joined(&cu12.libs)),
        ("GPULAB_CUDA_LIB", joined(&cu13.libs)),
    ]);
    uses(&report, &cu13);
}

#[test]
fn pip_wheels_in_a_virtual_environment_are_found_without_any_path() {
    let Some(sets) = sets() else { return };
    for set in &sets {
        let venv = tempfile::tempdir().unwrap();
        let packages = venv.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&packages).unwrap();
        std::os::unix::fs::symlink(&set.root, packages.join("nvidia")).unwrap();
        let report = doctor(&[("VIRTUAL_ENV", venv.path().display().to_string())]);
        let nvrtc = passed(&report, "NVRTC loads");
        assert!(
            nvrtc.starts_with(&format!("NVRTC {}.", set.major)),
            "{nvrtc}"
        );
        passed(&report, "NVRTC compiles every kernel");
        let blas = passed(&report, "cuBLAS loads");
        assert!(
            blas.starts_with(&format!("cuBLAS {}.", set.major)),
            "{blas}"
        );
    }
}

#[test]
fn an_unactivated_dot_venv_above_the_working_directory_is_found() {
    let Some(sets) = sets() else { return };
    for set in &sets {
        let project = tempfile::tempdir().unwrap();
        let packages = project.path().join(".venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(&packages).unwrap();
        std::os::unix::fs::symlink(&set.root, packages.join("nvidia")).unwrap();
        let work = project.path().join("notebooks/week1");
        std::fs::create_dir_all(&work).unwrap();
        let report = doctor_in(Some(&work), &[]);
        let nvrtc = passed(&report, "NVRTC loads");
        assert!(
            nvrtc.starts_with(&format!("NVRTC {}.", set.major)),
            "{nvrtc}"
        );
    }
}

#[test]
fn gpulab_cuda_major_picks_the_set_when_both_are_there() {
    let Some([cu12, cu13]) = sets() else { return };
    let both = joined(&[cu13.libs.clone(), cu12.libs.clone()].concat());
    let report = doctor(&[("LD_LIBRARY_PATH", both.clone())]);
    uses(&report, &cu13);
    let report = doctor(&[
        ("LD_LIBRARY_PATH", both.clone()),
        ("GPULAB_CUDA_MAJOR", "12".into()),
    ]);
    uses(&report, &cu12);
    let report = doctor(&[
        ("LD_LIBRARY_PATH", both),
        ("GPULAB_CUDA_MAJOR", "11".into()),
    ]);
    let nvrtc = &report["layers"][3];
    assert_eq!(nvrtc["status"], "failed", "{nvrtc}");
    assert!(
        nvrtc["detail"].as_str().unwrap().contains("12 or 13"),
        "{nvrtc}"
    );
}

#[test]
fn nvrtc_13s_oldest_architecture_is_the_one_the_fallback_assumes() {
    let Some([_, cu13]) = sets() else { return };
    let report = doctor(&[("LD_LIBRARY_PATH", joined(&cu13.libs))]);
    let nvrtc = passed(&report, "NVRTC loads");
    let oldest = gpulab::gpu::loader::OLDEST_SM_CUDA_13;
    assert!(
        nvrtc.contains(&format!("compiles for sm_{oldest} …")),
        "{nvrtc}: CUDA 13's oldest architecture moved; update OLDEST_SM_CUDA_13"
    );
}

/// A stand-in for the CUDA toolkit's `lib64/stubs/libcuda.so`: every call fails with
/// CUDA_ERROR_STUB_LIBRARY (34), as the driver API documents for the stub.
const STUB_LIBCUDA: &str = r#"
int cuInit(unsigned int flags) { (void)flags; return 34; }
int cuDriverGetVersion(int *version) { (void)version; return 34; }
int cuDeviceGet(int *device, int ordinal) { (void)device; (void)ordinal; return 34; }
int cuDeviceGetCount(int *count) { (void)count; return 34; }
"#;

#[test]
fn a_stub_libcuda_is_named_and_never_a_silent_cpu_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("stub.c");
    std::fs::write(&source, STUB_LIBCUDA).unwrap();
    let library = dir.path().join("libcuda.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .output()
        .expect("cc (build-essential) is needed to build the stub");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::os::unix::fs::symlink(&library, dir.path().join("libcuda.so.1")).unwrap();
    let report = doctor(&[("LD_LIBRARY_PATH", dir.path().display().to_string())]);
    let driver = &report["layers"][0];
    assert_eq!(driver["status"], "failed", "{driver}");
    let detail = driver["detail"].as_str().unwrap();
    assert!(
        detail.contains("is a stub") && detail.contains("error 34"),
        "{detail}"
    );
    assert!(
        detail.contains(&dir.path().display().to_string()),
        "names the file: {detail}"
    );
    assert_eq!(report["backend"], "cpu");
    let verdict = report["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("is a stub"),
        "the verdict carries the reason: {verdict}"
    );
}

/// C that fails to compile unless each version's headers agree with the constants in
/// `gpu::cublas` and with the signatures `gpu::nvrtc` and `gpu::cublas` call through.
fn abi_check_source() -> String {
    let constants = [
        ("CUBLAS_OP_N", cublas::OP_N),
        ("CUBLAS_OP_T", cublas::OP_T),
        ("CUBLAS_GEMM_DEFAULT", cublas::GEMM_DEFAULT),
        ("CUDA_R_32F", cublas::R_32F),
        ("CUDA_R_64F", cublas::R_64F),
        ("CUDA_R_16F", cublas::R_16F),
        ("CUDA_R_16BF", cublas::R_16BF),
        ("CUBLAS_COMPUTE_32F", cublas::COMPUTE_32F),
        (
            "CUBLAS_COMPUTE_32F_FAST_TF32",
            cublas::COMPUTE_32F_FAST_TF32,
        ),
        ("CUBLAS_COMPUTE_64F", cublas::COMPUTE_64F),
        ("CUBLAS_STATUS_SUCCESS", 0),
        ("NVRTC_SUCCESS", 0),
        ("MAJOR_VERSION", 0),
        ("MINOR_VERSION", 1),
        ("PATCH_LEVEL", 2),
    ];
    let mut c = String::from("#include <nvrtc.h>\n#include <cublas_v2.h>\n");
    for (name, value) in constants {
        c.push_str(&format!("_Static_assert({name} == {value}, \"{name}\");\n"));
    }
    c.push_str(
        r#"
nvrtcResult (*gpulab_version)(int *, int *) = nvrtcVersion;
nvrtcResult (*gpulab_num_archs)(int *) = nvrtcGetNumSupportedArchs;
nvrtcResult (*gpulab_archs)(int *) = nvrtcGetSupportedArchs;
nvrtcResult (*gpulab_create)(nvrtcProgram *, const char *, const char *, int,
                      const char *const *, const char *const *) = nvrtcCreateProgram;
nvrtcResult (*gpulab_destroy)(nvrtcProgram *) = nvrtcDestroyProgram;
nvrtcResult (*gpulab_compile)(nvrtcProgram, int, const char *const *) = nvrtcCompileProgram;
nvrtcResult (*gpulab_log_size)(nvrtcProgram, size_t *) = nvrtcGetProgramLogSize;
nvrtcResult (*gpulab_log)(nvrtcProgram, char *) = nvrtcGetProgramLog;
nvrtcResult (*gpulab_ptx_size)(nvrtcProgram, size_t *) = nvrtcGetPTXSize;
nvrtcResult (*gpulab_ptx)(nvrtcProgram, char *) = nvrtcGetPTX;
nvrtcResult (*gpulab_cubin_size)(nvrtcProgram, size_t *) = nvrtcGetCUBINSize;
nvrtcResult (*gpulab_cubin)(nvrtcProgram, char *) = nvrtcGetCUBIN;
const char *(*gpulab_error_string)(nvrtcResult) = nvrtcGetErrorString;
cublasStatus_t (*gpulab_create_handle)(cublasHandle_t *) = cublasCreate_v2;
cublasStatus_t (*gpulab_destroy_handle)(cublasHandle_t) = cublasDestroy_v2;
cublasStatus_t (*gpulab_set_stream)(cublasHandle_t, cudaStream_t) = cublasSetStream_v2;
cublasStatus_t (*gpulab_get_property)(libraryPropertyType, int *) = cublasGetProperty;
const char *(*gpulab_status_string)(cublasStatus_t) = cublasGetStatusString;
cublasStatus_t (*gpulab_gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const void *, const void *, cudaDataType, int, const void *,
                          cudaDataType, int, const void *, void *, cudaDataType, int,
                          cublasComputeType_t, cublasGemmAlgo_t) = cublasGemmEx;
"#,
    );
    c
}

fn compiles(source: &Path, includes: &[PathBuf]) -> Result<(), String> {
    let mut command = Command::new("cc");
    command.args([
        "-std=c11",
        "-fsyntax-only",
        "-Werror=incompatible-pointer-types",
    ]);
    for dir in includes {
        command.arg("-I").arg(dir);
    }
    let out = command.arg(source).output().map_err(|e| {
        format!("cannot run cc ({e}): install build-essential (tests/setup.sh does)")
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn the_c_functions_and_constants_match_both_versions_headers() {
    let Some(sets) = sets() else { return };
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("abi.c");
    std::fs::write(&good, abi_check_source()).unwrap();
    // The check can fail: a wrong constant and a wrong arity are both caught.
    let bad = dir.path().join("bad.c");
    std::fs::write(
        &bad,
        abi_check_source()
            .replace("CUBLAS_COMPUTE_64F == 70", "CUBLAS_COMPUTE_64F == 71")
            .replace(
                "nvrtcResult (*gpulab_destroy)(nvrtcProgram *)",
                "nvrtcResult (*gpulab_destroy)(nvrtcProgram *, int)",
            ),
    )
    .unwrap();
    for set in &sets {
        compiles(&good, &set.includes)
            .unwrap_or_else(|e| panic!("CUDA {} headers disagree: {e}", set.major));
        let error = compiles(&bad, &set.includes).expect_err("a wrong ABI must not compile");
        assert!(error.contains("CUBLAS_COMPUTE_64F"), "{error}");
        assert!(error.contains("destroy"), "{error}");
    }
}
