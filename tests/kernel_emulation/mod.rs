//! The kernels in `kernels/`, proved on a machine without a GPU. `harness.cpp` compiles
//! the very `.cu` files NVRTC compiles, unchanged, with the host C++ compiler against a
//! small emulation of CUDA (`cuda_emulation.h`: blocks of coroutine threads run in
//! `__syncthreads` phases, `__shared__` per block; `cuda_bf16.h` and `cuda_fp16.h`:
//! software BF16 and FP16). Each test launches a kernel with the grid its launcher
//! computes (`gpu::launch::LaunchShape`) and with a far smaller one, on seeded random
//! inputs at sizes that leave partial blocks and grid-stride tails, and compares the
//! output with the Rust function the CPU backend computes the same step with.
//!
//! - [`emulator`]: builds the harness once and launches kernels on it;
//! - [`inputs`]: sizes, launches and data; [`compare`]: ULP comparisons;
//! - [`elementwise`], [`training`], [`busy`]: the kernels, by file; [`fused`]: the
//!   training step's fused and two-stage kernels.
//!
//! Needs a C++17 compiler (`c++`, or `CXX`): Debian's build-essential.

mod busy;
mod compare;
mod elementwise;
mod emulator;
mod fused;
mod inputs;
mod training;

use gpulab::gpu::kernels::FILES;

/// Every kernel the server compiles is in the harness (so every test above can launch
/// it), and the harness launches nothing else but its own `emulation_` checks.
#[test]
fn the_harness_holds_every_kernel_file_and_function() {
    let mut in_harness: Vec<String> = emulator::kernels()
        .into_iter()
        .filter(|name| !name.starts_with("emulation_"))
        .collect();
    in_harness.sort();
    let mut registered: Vec<String> = FILES
        .iter()
        .flat_map(|file| file.functions.iter().map(|f| f.to_string()))
        .collect();
    registered.sort();
    assert_eq!(
        in_harness, registered,
        "tests/kernel_emulation/harness.cpp must #include every file in kernels/ and list each function with KERNEL(...)"
    );
}
