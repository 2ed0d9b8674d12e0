//! Builds the harness (`harness.cpp`: every `kernels/*.cu` compiled by the host C++
//! compiler against `cuda_emulation.h`) once per test run, and launches one kernel per
//! harness process over the byte protocol `harness.cpp` describes. The compile flags
//! keep IEEE single precision as written: `-ffp-contract=off` stops the compiler from
//! fusing `a * b + c` into an FMA (GCC does by default on some targets), so the
//! kernels' arithmetic is the same operations the Rust references perform.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;

use cudarc::driver::LaunchConfig;
use half::bf16;

/// One kernel argument, as the kernel's parameter list declares it.
#[derive(Debug, Clone)]
pub(super) enum Arg {
    /// `unsigned long long`.
    U64(u64),
    /// `unsigned int`.
    U32(u32),
    /// `float`.
    F32(f32),
    /// `float*` / `const float*`.
    F32s(Vec<f32>),
    /// `int*` / `const int*`.
    I32s(Vec<i32>),
    /// `__nv_bfloat16*` / `const __nv_bfloat16*`.
    Bf16s(Vec<bf16>),
}

impl Arg {
    /// The FP32 buffer this argument holds.
    pub(super) fn f32s(&self) -> &[f32] {
        match self {
            Self::F32s(v) => v,
            other => panic!("expected an FP32 buffer, found {other:?}"),
        }
    }

    /// The BF16 buffer this argument holds.
    pub(super) fn bf16s(&self) -> &[bf16] {
        match self {
            Self::Bf16s(v) => v,
            other => panic!("expected a BF16 buffer, found {other:?}"),
        }
    }
}

/// The order in which the emulator runs the threads of each barrier phase (and the
/// blocks of the grid). A kernel whose output depends on it has a race.
#[derive(Debug, Clone, Copy)]
pub(super) enum Order {
    /// Thread 0 first.
    Ascending,
    /// The last thread first.
    Descending,
}

/// Runs `kernel` on the emulator with `config`, threads in `order`, and returns `args`
/// with every buffer as the kernel left it. Panics with the harness's message when the
/// launch fails (a wrong argument list, a divergent `__syncthreads`, an access outside
/// a buffer).
pub(super) fn launch(kernel: &str, config: LaunchConfig, order: Order, args: Vec<Arg>) -> Vec<Arg> {
    let mut child = Command::new(harness())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kernel-emulation harness starts");
    // A harness that rejects the request exits before reading all of it; its stderr
    // then says why, so a broken pipe here is not the error to report.
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&request(kernel, &config, order, &args));
    let output = child.wait_with_output().expect("the harness runs");
    if !output.status.success() {
        panic!(
            "{kernel} on grid {:?} × block {:?} ({order:?}): {}\n{}",
            config.grid_dim,
            config.block_dim,
            died(output.status),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    buffers_back(kernel, &output.stdout, args)
}

/// The kernel names `harness --list` prints.
pub(super) fn kernels() -> Vec<String> {
    let output = Command::new(harness())
        .arg("--list")
        .output()
        .expect("the harness runs");
    assert!(output.status.success(), "harness --list failed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn died(status: ExitStatus) -> String {
    match status.signal() {
        Some(signal @ (7 | 11)) => format!(
            "the harness crashed (signal {signal}): an access outside a buffer (every buffer ends at a guard page) or a thread overflowing its 64 KiB stack"
        ),
        Some(signal) => format!("the harness was killed by signal {signal}"),
        None => format!("the harness exited with {status}"),
    }
}

/// The harness binary, compiled on first use; every later call reuses it.
fn harness() -> &'static Path {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BUILT.get_or_init(build) {
        Ok(path) => path,
        Err(message) => panic!("{message}"),
    }
}

fn build() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = root.join("tests/kernel_emulation");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernel_emulation");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    // Built under a name of its own, then renamed: a concurrent test run never starts a
    // half-written binary.
    let partial = out.join(format!("harness.{}", std::process::id()));
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let output = Command::new(&compiler)
        .args(["-std=c++17", "-O1", "-pthread", "-ffp-contract=off"])
        .args(["-Wall", "-Wextra"])
        .arg("-I")
        .arg(&sources)
        .arg("-I")
        .arg(root.join("kernels"))
        .arg(sources.join("harness.cpp"))
        .arg("-o")
        .arg(&partial)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "the kernel emulation needs a C++ compiler and `{compiler}` was not found: install Debian's build-essential (`apt-get install build-essential`; tests/setup.sh does) or set CXX"
            ),
            _ => format!("cannot run `{compiler}`: {e}"),
        })?;
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "`{compiler}` could not compile tests/kernel_emulation/harness.cpp (kernels/*.cu on the CUDA emulation):\n{log}"
        ));
    }
    if !log.trim().is_empty() {
        eprintln!("warnings compiling the kernel emulation:\n{log}");
    }
    let binary = out.join("harness");
    std::fs::rename(&partial, &binary).map_err(|e| format!("cannot rename the harness: {e}"))?;
    Ok(binary)
}

fn request(kernel: &str, config: &LaunchConfig, order: Order, args: &[Arg]) -> Vec<u8> {
    let mut out = Vec::new();
    let u32s = |out: &mut Vec<u8>, values: &[u32]| {
        values
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()))
    };
    let length = |n: usize| u32::try_from(n).expect("fits the protocol's u32");
    u32s(&mut out, &[length(kernel.len())]);
    out.extend_from_slice(kernel.as_bytes());
    let (grid, block) = (config.grid_dim, config.block_dim);
    u32s(
        &mut out,
        &[grid.0, grid.1, grid.2, block.0, block.1, block.2],
    );
    u32s(&mut out, &[config.shared_mem_bytes]);
    out.push(match order {
        Order::Ascending => b'a',
        Order::Descending => b'd',
    });
    u32s(&mut out, &[length(args.len())]);
    for arg in args {
        let (tag, payload) = match arg {
            Arg::U64(v) => (b'u', v.to_le_bytes().to_vec()),
            Arg::U32(v) => (b'w', u64::from(*v).to_le_bytes().to_vec()),
            Arg::F32(v) => (b'f', u64::from(v.to_bits()).to_le_bytes().to_vec()),
            Arg::F32s(v) => (
                b'F',
                buffer(v.len(), v.iter().flat_map(|x| x.to_le_bytes())),
            ),
            Arg::I32s(v) => (
                b'I',
                buffer(v.len(), v.iter().flat_map(|x| x.to_le_bytes())),
            ),
            Arg::Bf16s(v) => (
                b'B',
                buffer(v.len(), v.iter().flat_map(|x| x.to_bits().to_le_bytes())),
            ),
        };
        out.push(tag);
        out.extend(payload);
    }
    out
}

/// A buffer on the wire: its element count, then its bytes.
fn buffer(count: usize, bytes: impl Iterator<Item = u8>) -> Vec<u8> {
    (count as u64)
        .to_le_bytes()
        .into_iter()
        .chain(bytes)
        .collect()
}

/// `args` with each buffer replaced by the harness's copy after the launch.
fn buffers_back(kernel: &str, mut bytes: &[u8], args: Vec<Arg>) -> Vec<Arg> {
    let mut take = |n: usize| {
        assert!(bytes.len() >= n, "{kernel}: the harness's reply ends early");
        let (head, rest) = bytes.split_at(n);
        bytes = rest;
        head
    };
    let back = args
        .into_iter()
        .map(|arg| {
            let (tag, size) = match arg {
                Arg::F32s(_) => (b'F', 4),
                Arg::I32s(_) => (b'I', 4),
                Arg::Bf16s(_) => (b'B', 2),
                scalar => return scalar,
            };
            assert_eq!(
                take(1),
                [tag],
                "{kernel}: the harness's reply is out of step"
            );
            let count = u64::from_le_bytes(take(8).try_into().expect("8 bytes")) as usize;
            let data = take(count * size);
            let words4 = || data.chunks_exact(4).map(|c| c.try_into().expect("4 bytes"));
            match arg {
                Arg::F32s(_) => Arg::F32s(words4().map(f32::from_le_bytes).collect()),
                Arg::I32s(_) => Arg::I32s(words4().map(i32::from_le_bytes).collect()),
                _ => Arg::Bf16s(
                    data.chunks_exact(2)
                        .map(|c| bf16::from_bits(u16::from_le_bytes([c[0], c[1]])))
                        .collect(),
                ),
            }
        })
        .collect();
    assert!(
        bytes.is_empty(),
        "{kernel}: bytes left over in the harness's reply"
    );
    back
}
