//! The one integration-test binary. Each module spawns the real app (or the real
//! `gpulab` binary) and checks it from the outside, the way a browser or author would.

mod abuse;
mod allocator_playground;
mod bad_input;
mod class_mode;
mod class_round;
mod cli;
mod cockpit;
mod config_table;
mod content;
mod cpu_reference;
// Linux's NVIDIA wheels (`.so` files, symlinked site-packages): the Windows names and
// folders are unit-tested in server/gpu/platform.rs and loader_tests.rs.
#[cfg(unix)]
mod cuda_libraries;
mod docker;
mod durability;
mod encoding;
mod experiments;
mod fair_share;
mod faults;
mod gpu;
mod gpu_runs;
mod gradebook;
mod http;
// The host's `c++` and Unix exit signals; the same kernels are checked on Linux.
#[cfg(unix)]
mod kernel_emulation;
mod kernels;
mod labs;
mod layers;
mod learner;
mod lesson_experiments;
mod lint;
mod lint_cli;
mod lint_corpus;
mod lint_lessons;
mod measured_quiz;
mod nojs;
mod openapi;
mod predictions;
mod quiz;
mod reference_runs;
mod scale_out;
mod support;
mod upgrade;
