//! The image the Dockerfile builds: an unprivileged user with GPU access, a stop grace
//! period longer than the drain, compose building this Dockerfile with its env file,
//! pinned base images whose CUDA headers match, the build-time doctor check, and a
//! build context that holds what the build reads and nothing secret.

use std::path::PathBuf;
use std::process::Command;

use super::binary::{ServeEnv, embedded_paths, files_under, normalise, read, relative};
use super::compose::{Compose, Yaml, duration_secs};
use super::dockerfile::Dockerfile;
use super::files::{DockerIgnore, EnvExample};
use crate::support::repo_path;

#[test]
fn container_runs_unprivileged_with_gpu_access() {
    let dockerfile = Dockerfile::load();
    let user = Dockerfile::one(dockerfile.runtime(), "USER");
    let uid = user.split(':').next().unwrap();
    assert!(
        !["root", "0"].contains(&uid),
        "docker/Dockerfile: USER {user} is root"
    );
    if uid.chars().all(|c| c.is_ascii_digit()) {
        let runs = Dockerfile::all(dockerfile.runtime(), "RUN").join(" ");
        assert!(
            runs.contains(&format!("--uid {uid}")),
            "USER {uid}: the Dockerfile should create that user (useradd --uid {uid})"
        );
        if let Some(gid) = user.split(':').nth(1) {
            assert!(
                runs.contains(&format!("--gid {gid}")),
                "USER {user}: the Dockerfile should create group {gid} (groupadd --gid {gid})"
            );
        }
        assert!(
            read("docker/README.md").contains(uid),
            "docker/README.md's restore and chown steps should use uid {uid}"
        );
    }
    let env = dockerfile.env();
    let capabilities: Vec<&str> = env
        .get("NVIDIA_DRIVER_CAPABILITIES")
        .expect("NVIDIA_DRIVER_CAPABILITIES is set")
        .split(',')
        .collect();
    for needed in ["compute", "utility"] {
        assert!(
            capabilities.contains(&needed) || capabilities.contains(&"all"),
            "NVIDIA_DRIVER_CAPABILITIES lacks {needed}"
        );
    }
    assert!(env.contains_key("NVIDIA_VISIBLE_DEVICES"));

    let compose = Compose::load();
    let devices = compose
        .service("deploy.resources.reservations.devices")
        .seq();
    assert_eq!(devices.len(), 1);
    let device = &devices[0];
    assert_eq!(device.at("driver").str(), "nvidia");
    assert!(
        device
            .at("capabilities")
            .seq()
            .contains(&Yaml::Str("gpu".into())),
        "the GPU reservation needs capabilities: [gpu]"
    );
    assert!(
        device.get("count").is_some() || device.get("device_ids").is_some(),
        "the GPU reservation needs count or device_ids"
    );
    assert!(
        ["on-failure", "unless-stopped", "always"].contains(&compose.service("restart").str()),
        "docker/compose.yaml: restart policy"
    );
}

#[test]
fn the_image_sets_no_driver_requirement_and_says_which_drivers_it_runs_on() {
    // nvidia/cuda images set NVIDIA_REQUIRE_CUDA, and the NVIDIA Container Toolkit then
    // refuses drivers outside the branches it lists; this image is not built on them and
    // must not bring such a check back: the binary picks its libraries for the driver it
    // finds. What it runs on is written beside it, in the Dockerfile and the guide.
    let dockerfile = Dockerfile::load();
    let env = dockerfile.env();
    assert!(
        !env.contains_key("NVIDIA_REQUIRE_CUDA"),
        "docker/Dockerfile sets NVIDIA_REQUIRE_CUDA: the toolkit would refuse drivers GPU Lab runs on"
    );
    for stage in &dockerfile.stages {
        assert!(
            !stage[0].args.contains("nvidia/cuda"),
            "docker/Dockerfile: FROM {}: the runtime is Debian with NVIDIA's wheels, not nvidia/cuda",
            stage[0].args
        );
    }
    let text = read("docker/Dockerfile");
    let guide = read("docker/README.md");
    for needed in [
        "R525",
        "R570",
        "R580",
        "Blackwell",
        "minor-version compatibility",
    ] {
        assert!(
            text.contains(needed),
            "docker/Dockerfile should say which drivers it runs on: {needed}"
        );
        assert!(
            guide.contains(needed),
            "docker/README.md should say which drivers the image runs on: {needed}"
        );
    }
}

#[test]
fn stop_grace_period_covers_the_drain() {
    let serve = ServeEnv::load();
    let example = EnvExample::load();
    // SIGTERM: the running experiment gets the drain timeout (before that setting
    // existed: the job timeout), then requests in flight get the request timeout.
    let drain = serve
        .effective("GPULAB_DRAIN_TIMEOUT_SECS", &example)
        .or_else(|| serve.effective("GPULAB_JOB_TIMEOUT_SECS", &example))
        .expect("a drain or job timeout");
    let requests = serve
        .effective("GPULAB_REQUEST_TIMEOUT_SECS", &example)
        .unwrap_or(0);
    let grace = duration_secs(Compose::load().service("stop_grace_period").str());
    assert!(
        grace >= drain + requests + 10,
        "docker/compose.yaml stop_grace_period is {grace}s, but draining may take {drain}s + {requests}s: Docker would kill the server mid-drain"
    );
    assert!(
        read("docker/README.md").contains(&format!("--stop-timeout {grace}")),
        "docker/README.md's plain `docker run` should use --stop-timeout {grace}"
    );
}

#[test]
fn compose_builds_this_dockerfile_and_reads_the_env_file() {
    let compose = Compose::load();
    let docker_dir = repo_path("docker");
    let context = normalise(&docker_dir.join(compose.service("build.context").str()));
    assert_eq!(
        context,
        normalise(&repo_path("")),
        "build context is the repository root"
    );
    let dockerfile = context.join(compose.service("build.dockerfile").str());
    assert_eq!(normalise(&dockerfile), repo_path("docker/Dockerfile"));
    assert!(!compose.service("image").str().is_empty());
    let env_files: Vec<String> = match compose.service("env_file") {
        Yaml::Str(s) => vec![s.clone()],
        Yaml::Seq(items) => items.iter().map(|i| i.str().to_string()).collect(),
        other => panic!("env_file: {other:?}"),
    };
    for file in env_files {
        let example = docker_dir.join(format!("{file}.example"));
        assert!(
            example.exists(),
            "compose reads {file}; instructors copy it from {}, which is missing",
            example.display()
        );
    }
    // The README's commands name the service and the container.
    let readme = read("docker/README.md");
    assert!(readme.contains(&format!("exec {} gpulab doctor", compose.service_name)));
    if let Some(name) = compose.service_opt("container_name") {
        assert!(readme.contains(&format!("docker cp {}:", name.str())));
    }
}

#[test]
fn base_images_are_pinned_and_the_cuda_wheels_checked_by_hash() {
    let dockerfile = Dockerfile::load();
    let stage_names: Vec<String> = dockerfile
        .stages
        .iter()
        .filter_map(|s| {
            let args = s[0].args.to_ascii_lowercase();
            args.split_once(" as ").map(|(_, name)| name.to_string())
        })
        .collect();
    for stage in &dockerfile.stages {
        let image = stage[0].args.split_whitespace().next().unwrap();
        // `scratch` is no image, and `${GPULAB_BINARY}` names one of the stages above.
        if image == "scratch" || image.starts_with("${") {
            continue;
        }
        assert!(
            !stage_names.contains(&image.to_ascii_lowercase()),
            "FROM {image}: a stage"
        );
        let (_, tag) = image
            .split_once(':')
            .unwrap_or_else(|| panic!("FROM {image} has no tag"));
        assert!(
            tag != "latest" && tag.chars().next().is_some_and(|c| c.is_ascii_digit()),
            "FROM {image}: pin a versioned tag"
        );
    }
    // The runtime and the stage that fetches the wheels are Debian 12, the builder's
    // release (bookworm): the binary needs no newer glibc than the runtime has.
    let cuda = dockerfile.stage("cuda");
    for stage in [cuda, dockerfile.runtime()] {
        assert!(
            stage[0].args.starts_with("debian:12"),
            "FROM {}: Debian 12, as the builder (rust:…-bookworm)",
            stage[0].args
        );
    }
    assert!(
        dockerfile.builder()[0].args.contains("-bookworm"),
        "the builder is Debian 12 (bookworm), as the runtime"
    );

    // pip installs the wheels listed in docker/cuda-wheels.txt, by hash only.
    let runs = Dockerfile::all(cuda, "RUN").join("\n");
    for flag in [
        "--require-hashes",
        "--no-deps",
        "--only-binary=:all:",
        "-r /tmp/cuda-wheels.txt",
    ] {
        assert!(
            runs.contains(flag),
            "the cuda stage's pip install lacks {flag}"
        );
    }
    assert!(
        Dockerfile::all(cuda, "COPY")
            .iter()
            .any(|c| c == "docker/cuda-wheels.txt /tmp/cuda-wheels.txt"),
        "the cuda stage copies docker/cuda-wheels.txt"
    );
    let wheels = read("docker/cuda-wheels.txt").replace("\\\n", " ");
    let mut pinned = Vec::new();
    for line in wheels.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let requirement = words.next().unwrap();
        let (name, version) = requirement.split_once("==").unwrap_or_else(|| {
            panic!("docker/cuda-wheels.txt: {requirement} is not pinned with ==")
        });
        let hashes: Vec<&str> = words
            .map(|w| {
                w.strip_prefix("--hash=sha256:")
                    .unwrap_or_else(|| panic!("docker/cuda-wheels.txt: {w} after {requirement}"))
            })
            .collect();
        // One for the Linux x86-64 wheel, one for aarch64.
        assert!(
            hashes.len() >= 2
                && hashes
                    .iter()
                    .all(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit())),
            "docker/cuda-wheels.txt: {requirement} needs the SHA-256 of its x86-64 and aarch64 wheels"
        );
        pinned.push((name.to_string(), version.to_string()));
    }
    // The same versions the test suite proves (tests/setup.sh installs them).
    let setup = read("tests/setup.sh");
    for name in [
        "nvidia-cuda-nvrtc-cu12",
        "nvidia-cuda-runtime-cu12",
        "nvidia-cublas-cu12",
    ] {
        let (_, version) = pinned
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("docker/cuda-wheels.txt lacks {name}"));
        assert!(
            setup.contains(&format!("{name}=={version}")),
            "docker/cuda-wheels.txt pins {name}=={version}, but tests/setup.sh tests another version"
        );
    }
    // NVRTC finds the runtime wheel's headers (cuda_fp16.h, cuda_bf16.h) where the
    // cuda stage puts them.
    let include = dockerfile
        .env()
        .get("GPULAB_CUDA_INCLUDE")
        .cloned()
        .expect("docker/Dockerfile sets GPULAB_CUDA_INCLUDE");
    assert!(
        runs.contains(&format!("nvidia/cuda_runtime/include {include}")),
        "GPULAB_CUDA_INCLUDE={include}, but the cuda stage puts the headers elsewhere"
    );
}

#[test]
fn ci_feeds_the_runtime_stage_its_own_binary_through_the_same_dockerfile() {
    // By default the builder compiles the binary; CI hands in the release binary it built
    // (tests/image/build.sh), through the `prebuilt` stage. Both must name the same
    // build argument, stage and build context.
    let dockerfile = Dockerfile::load();
    assert!(
        dockerfile
            .global_args
            .iter()
            .any(|a| a.args == "GPULAB_BINARY=builder"),
        "docker/Dockerfile: ARG GPULAB_BINARY=builder before the first FROM (users build from source)"
    );
    let binary = dockerfile.stage("binary");
    assert_eq!(binary[0].args, "${GPULAB_BINARY} AS binary");
    let prebuilt = dockerfile.stage("prebuilt");
    assert_eq!(
        Dockerfile::all(prebuilt, "COPY"),
        ["--from=gpulab-bin gpulab /out/gpulab"]
    );
    assert!(
        Dockerfile::all(dockerfile.builder(), "RUN")
            .iter()
            .any(|r| r.contains("/out/gpulab")),
        "the builder leaves the binary where the prebuilt stage does: /out/gpulab"
    );
    assert!(
        Dockerfile::all(dockerfile.runtime(), "COPY")
            .iter()
            .any(|c| c == "--from=binary /out/gpulab /usr/local/bin/gpulab"),
        "the runtime copies the binary from the `binary` stage"
    );
    let build = read("tests/image/build.sh");
    for needed in [
        "--build-arg GPULAB_BINARY=prebuilt",
        "--build-context gpulab-bin=",
        "-f docker/Dockerfile",
    ] {
        assert!(
            build.contains(needed),
            "tests/image/build.sh lacks {needed}"
        );
    }
}

#[test]
fn doctor_check_in_the_dockerfile_matches_the_doctor() {
    let dockerfile = Dockerfile::load();
    let runs = Dockerfile::all(dockerfile.runtime(), "RUN").join("\n");
    assert!(
        runs.contains("gpulab doctor"),
        "docker/Dockerfile should run gpulab doctor at build time"
    );
    let marker = "'\\[ok +\\] ";
    let layers: Vec<&str> = runs
        .match_indices(marker)
        .map(|(at, _)| {
            let rest = &runs[at + marker.len()..];
            &rest[..rest.find('\'').unwrap()]
        })
        .collect();
    assert!(
        layers.len() >= 2,
        "the Dockerfile greps doctor's output for NVRTC and cuBLAS: {runs}"
    );
    // Run the real doctor, with the test suite's NVRTC wheel when it is installed (as
    // tests/run.sh does), so at least the NVRTC layer can show the `ok` format.
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpulab"));
    command.arg("doctor");
    let wheels = repo_path("target/cuda-wheels/nvidia");
    if wheels.exists() {
        command
            .env(
                "LD_LIBRARY_PATH",
                format!(
                    "{}:{}",
                    wheels.join("cuda_nvrtc/lib").display(),
                    wheels.join("cublas/lib").display()
                ),
            )
            .env("GPULAB_CUDA_INCLUDE", wheels.join("cuda_runtime/include"));
    }
    let output = String::from_utf8(command.output().unwrap().stdout).unwrap();
    for layer in layers {
        let line = output
            .lines()
            .find(|l| l.contains(&format!("] {layer}:")))
            .unwrap_or_else(|| {
                panic!("the Dockerfile expects a doctor layer {layer:?}; doctor printed:\n{output}")
            });
        let mark = &line[line.find('[').unwrap() + 1..line.find(']').unwrap()];
        if mark.trim() == "ok" {
            assert!(
                mark.starts_with("ok ") && mark.trim_start_matches("ok").chars().all(|c| c == ' '),
                "doctor's ok mark {mark:?} would not match the Dockerfile's `\\[ok +\\]`"
            );
        } else {
            assert!(
                ["FAILED", "skipped"].contains(&mark.trim()),
                "unknown doctor mark {mark:?} in {line}"
            );
        }
    }
}

#[test]
fn build_context_holds_what_the_build_reads_and_nothing_secret() {
    let ignore = DockerIgnore::load();
    let dockerfile = Dockerfile::load();
    assert!(
        !repo_path("docker/.dockerignore").exists(),
        "docker/.dockerignore is never read (the context is the repository root): use .dockerignore"
    );
    // The builder copies sources to the same relative place in its WORKDIR.
    let mut copied = Vec::new();
    for args in Dockerfile::all(dockerfile.builder(), "COPY") {
        let words: Vec<&str> = args
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .collect();
        let (dest, sources) = words.split_last().unwrap();
        for source in sources {
            assert!(repo_path(source).exists(), "COPY {source}: no such path");
            if sources.len() == 1 {
                assert_eq!(
                    dest.trim_start_matches("./").trim_end_matches('/'),
                    *source,
                    "COPY {source} {dest}: keep the repository layout"
                );
            }
            copied.push(source.to_string());
        }
    }
    let covered = |path: &str| {
        copied
            .iter()
            .any(|c| path == c || path.starts_with(&format!("{c}/")))
    };

    // Cargo's manifest and the crate roots it names.
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    let mut roots = vec![manifest["lib"]["path"].as_str().unwrap().to_string()];
    for bin in manifest["bin"].as_array().unwrap() {
        roots.push(bin["path"].as_str().unwrap().to_string());
    }
    let runs = Dockerfile::all(dockerfile.builder(), "RUN");
    for root in &roots {
        assert!(covered(root), "the builder does not COPY {root}");
        assert!(
            runs.iter().filter(|r| r.contains(root.as_str())).count() >= 2,
            "the builder's placeholder build and its touch step should both name {root}"
        );
    }
    for needed in ["Cargo.toml", "Cargo.lock"] {
        assert!(covered(needed), "the builder does not COPY {needed}");
        assert!(
            !ignore.excludes(needed),
            ".dockerignore leaves out {needed}"
        );
    }
    // Every Rust source and every embedded file reaches the builder.
    let mut needed: Vec<PathBuf> = files_under(&repo_path("server"));
    let embedded = embedded_paths();
    assert!(
        embedded.iter().any(|p| p.ends_with("content"))
            && embedded.iter().any(|p| p.ends_with("web/templates")),
        "expected to find the embedded content/ and templates: {embedded:?}"
    );
    for path in embedded {
        assert!(
            path.exists(),
            "embedded path {} does not exist",
            path.display()
        );
        if path.is_dir() {
            needed.extend(files_under(&path));
        } else {
            needed.push(path);
        }
    }
    for file in needed {
        let file = relative(&file);
        assert!(
            covered(&file),
            "the build reads {file}, but the builder does not COPY it"
        );
        assert!(
            !ignore.excludes(&file),
            ".dockerignore leaves out {file}, which the build reads"
        );
    }
    // What the other stages copy from the context (docker/cuda-wheels.txt) is let in too.
    for stage in &dockerfile.stages {
        for args in Dockerfile::all(stage, "COPY") {
            if args.starts_with("--from=") {
                continue;
            }
            let words: Vec<&str> = args.split_whitespace().collect();
            for source in &words[..words.len() - 1] {
                assert!(
                    !ignore.excludes(source),
                    ".dockerignore leaves out {source}, which docker/Dockerfile copies"
                );
            }
        }
    }
    // Secrets, data and build output stay out.
    for secret in [
        "docker/.env",
        "gpulab.db",
        "gpulab.db-wal",
        "target/release/gpulab",
        ".git/config",
        "tests/main.rs",
        "tests/e2e/node_modules/x/index.js",
    ] {
        assert!(
            ignore.excludes(secret),
            ".dockerignore lets {secret} into the build context"
        );
    }
}
