//! Every kernel in `kernels/` compiles with NVRTC, for several GPU generations. NVRTC
//! runs without a GPU: CI installs the pinned `nvidia-cuda-nvrtc-cu12` wheel and sets
//! `LD_LIBRARY_PATH` and `GPULAB_CUDA_INCLUDE` (tests/run.sh), and sets
//! `GPULAB_REQUIRE_NVRTC=1` so a missing library fails instead of skipping.

use gpulab::gpu::kernels::{FILES, compile};
use gpulab::gpu::loader::Library;

#[test]
fn every_kernel_compiles_with_nvrtc() {
    if !Library::Nvrtc.is_present() {
        assert!(
            std::env::var("GPULAB_REQUIRE_NVRTC").is_err(),
            "GPULAB_REQUIRE_NVRTC is set but libnvrtc cannot be loaded (check LD_LIBRARY_PATH)"
        );
        eprintln!(
            "SKIPPED every_kernel_compiles_with_nvrtc: libnvrtc not found (run tests/run.sh, which installs it)"
        );
        return;
    }
    for arch in ["compute_75", "compute_80", "compute_90"] {
        for file in FILES {
            let ptx =
                compile(file, arch).unwrap_or_else(|e| panic!("{} for {arch}: {e}", file.name));
            let text = ptx.to_src();
            for function in file.functions {
                assert!(
                    text.contains(&format!(".entry {function}(")),
                    "{}: no entry {function} in the PTX for {arch}",
                    file.name
                );
            }
        }
    }
}
