//! Every kernel in `kernels/` compiles with the NVRTC the loader finds, for several GPU
//! generations, both as PTX and as the cubin `Gpu::open` prefers. NVRTC runs without a
//! GPU: tests/setup.sh installs the pinned wheels and tests/run.sh puts the CUDA 12 set
//! on `LD_LIBRARY_PATH` and sets `GPULAB_REQUIRE_NVRTC=1`, so a missing library fails
//! instead of skipping. tests/cuda_libraries.rs does the same with each set alone.

use gpulab::gpu::kernels::{FILES, compile};
use gpulab::gpu::nvrtc::{self, Binary, Target};

#[test]
fn every_kernel_compiles_with_nvrtc_as_ptx_and_cubin() {
    match nvrtc::get() {
        Ok(_) => {}
        Err(e) => {
            assert!(
                std::env::var("GPULAB_REQUIRE_NVRTC").is_err(),
                "GPULAB_REQUIRE_NVRTC is set but NVRTC does not load: {e}"
            );
            eprintln!("SKIPPED every_kernel_compiles_with_nvrtc: {e} (run tests/run.sh)");
            return;
        }
    }
    let targets = [
        Target::Ptx(75),
        Target::Ptx(80),
        Target::Ptx(90),
        Target::Cubin(80),
        Target::Cubin(90),
    ];
    for target in targets {
        for file in FILES {
            let binary = compile(file, target)
                .unwrap_or_else(|e| panic!("{} as {}: {e}", file.name, target.describe()));
            for function in file.functions {
                match &binary {
                    Binary::Ptx(text) => assert!(
                        text.contains(&format!(".entry {function}(")),
                        "{}: no entry {function} in the {}",
                        file.name,
                        target.describe()
                    ),
                    Binary::Cubin(bytes) => {
                        assert!(bytes.starts_with(b"\x7fELF"), "a cubin is an ELF file");
                        let name = function.as_bytes();
                        assert!(
                            bytes.windows(name.len()).any(|w| w == name),
                            "{}: no symbol {function} in the {}",
                            file.name,
                            target.describe()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_target_is_the_devices_own_cubin_or_ptx_it_can_jit() {
    let Ok(nvrtc) = nvrtc::get() else { return };
    assert_eq!(nvrtc.target_for(9, 0).unwrap(), Target::Cubin(90));
    assert_eq!(nvrtc.target_for(8, 0).unwrap(), Target::Cubin(80));
    // A GPU newer than this NVRTC: PTX for the newest architecture it knows, for the
    // driver to compile.
    let newest = *nvrtc.archs.last().unwrap();
    assert_eq!(nvrtc.target_for(99, 9).unwrap(), Target::Ptx(newest));
    // A GPU older than this NVRTC supports: a clear refusal, never a wrong binary.
    let error = nvrtc.target_for(3, 0).unwrap_err().to_string();
    assert!(error.contains("compute capability 3.0"), "{error}");
    assert!(error.contains(&nvrtc.supported_range()), "{error}");
}
