//! Which `gpulab` binary the tests spawn. Under cargo it is the one cargo built for this
//! test binary; in a GPU pack (tests/gpu/pack.sh) copied to a machine without the build
//! folder, the path cargo baked in does not exist, so the packed test binary finds the
//! `gpulab` beside it — or the one `GPULAB_BIN` names (tests/gpu/gpu-run.sh sets it).

use std::path::{Path, PathBuf};

/// The binary to spawn; panics with every place it looked when there is none.
pub(crate) fn gpulab() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    resolve(
        std::env::var_os("GPULAB_BIN").map(PathBuf::from),
        Path::new(env!("CARGO_BIN_EXE_gpulab")),
        &exe,
    )
    .unwrap_or_else(|tried| panic!("no gpulab binary to spawn; tried {tried}"))
}

/// `GPULAB_BIN` when set (it must exist), else cargo's `baked` path when it exists, else
/// a `gpulab` beside `test_exe`; the error lists what was tried.
pub(crate) fn resolve(
    from_env: Option<PathBuf>,
    baked: &Path,
    test_exe: &Path,
) -> Result<PathBuf, String> {
    if let Some(path) = from_env {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("GPULAB_BIN={} (no such file)", path.display()))
        };
    }
    let beside = test_exe.with_file_name("gpulab");
    [baked.to_path_buf(), beside.clone()]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{} and {}", baked.display(), beside.display()))
}

#[test]
fn the_binary_is_found_from_the_environment_cargo_or_beside_the_test_binary() {
    let pack = tempfile::tempdir().unwrap();
    let packed = pack.path().join("gpulab");
    let test_exe = pack.path().join("gpulab-tests");
    let gone = Path::new("/nonexistent/build/target/debug/gpulab");
    // A pack copied elsewhere: cargo's path is gone, the binary beside the tests is used.
    let none = resolve(None, gone, &test_exe).unwrap_err();
    assert!(none.contains(&packed.display().to_string()), "{none}");
    std::fs::write(&packed, b"").unwrap();
    assert_eq!(resolve(None, gone, &test_exe).unwrap(), packed);
    // GPULAB_BIN wins, and a wrong one is an error rather than a silent fallback.
    let named = pack.path().join("other-gpulab");
    std::fs::write(&named, b"").unwrap();
    assert_eq!(
        resolve(Some(named.clone()), gone, &test_exe).unwrap(),
        named
    );
    let wrong = resolve(Some(pack.path().join("missing")), gone, &test_exe).unwrap_err();
    assert!(wrong.contains("GPULAB_BIN"), "{wrong}");
    // Under cargo, the baked path comes first.
    assert_eq!(resolve(None, &named, &test_exe).unwrap(), named);
}

/// The GPU run's `packed-binary` step: the server the tests spawn is the binary
/// `GPULAB_BIN` names (the pack's), not one from a build folder.
#[test]
fn the_spawned_server_is_the_packed_binary() {
    let expected = gpulab().canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = super::BinaryServer::start(&dir.path().join("gpulab.db"));
    let running = std::fs::read_link(format!("/proc/{}/exe", server.child.id())).unwrap();
    assert_eq!(running, expected);
    if let Some(named) = std::env::var_os("GPULAB_BIN") {
        assert_eq!(running, PathBuf::from(named).canonicalize().unwrap());
    }
}
