//! The Docker deployment (`docker/Dockerfile`, `docker/compose.yaml`,
//! `docker/.env.example`, `.dockerignore`, `docker/README.md`) agrees with the binary it
//! ships. There is no Docker engine on the development machines, so nothing here builds
//! an image: the files are read ([`dockerfile`], [`compose`], [`files`]) and checked
//! against the real `gpulab` ([`binary`]: its `serve --help`, `worker --help` and
//! `doctor` output), the real router, and the sources the build embeds. Each check names
//! the file to fix when it fails. The settings the image runs with are checked here; the
//! image itself in [`image`]; the PostgreSQL setup for several GPUs
//! (`docker/compose.postgres.yaml`, `docker/proxy.conf`) in [`postgres`] and its
//! Kubernetes manifests (`docker/k8s/`) in [`kubernetes`].

mod binary;
mod compose;
mod dockerfile;
mod files;
mod image;
mod kubernetes;
mod postgres;

use std::net::SocketAddr;
use std::path::PathBuf;

use reqwest::StatusCode;

use binary::{
    ServeEnv, files_under, gpulab_names, read, relative, variables_read_by_the_image_scripts,
    variables_read_by_the_server,
};
use compose::{Compose, Yaml};
use dockerfile::{Dockerfile, exec_form, health_url};
use files::EnvExample;

use crate::support::{repo_path, spawn};

#[test]
fn every_gpulab_variable_in_the_docker_files_is_real() {
    let serve = ServeEnv::load();
    let worker = ServeEnv::worker();
    let direct = variables_read_by_the_server();
    assert!(
        direct.contains("GPULAB_CUDA_INCLUDE"),
        "expected the server to read GPULAB_CUDA_INCLUDE (server/gpu/kernels.rs)"
    );
    let image_scripts = variables_read_by_the_image_scripts();
    assert!(
        image_scripts.contains("GPULAB_IMAGE_BIN"),
        "expected tests/image/build.sh to read GPULAB_IMAGE_BIN, found {image_scripts:?}"
    );
    let mut files: Vec<String> = [
        "docker/Dockerfile",
        "docker/compose.yaml",
        "docker/compose.postgres.yaml",
        "docker/.env.example",
        "docker/README.md",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    files.extend(
        files_under(&repo_path("docker/k8s"))
            .into_iter()
            .map(|file| relative(&file)),
    );
    // The Dockerfile's build arguments (ARG) are the build's, not the server's; the files
    // may name them too (the guide does).
    let dockerfile = Dockerfile::load();
    let build_args: Vec<String> = dockerfile
        .global_args
        .iter()
        .chain(dockerfile.stages.iter().flatten())
        .filter(|i| i.keyword == "ARG")
        .map(|i| i.args.split('=').next().unwrap_or("").to_string())
        .collect();
    for file in &files {
        for name in gpulab_names(&read(file)) {
            assert!(
                build_args.contains(&name)
                    || serve.names.contains(&name)
                    || worker.names.contains(&name)
                    || direct.contains(&name)
                    || image_scripts.contains(&name),
                "{file} names {name}, which is neither a `gpulab serve` env var ({:?}), a `gpulab worker` one ({:?}), read by the server nor by tests/image's scripts",
                serve.names,
                worker.names
            );
        }
    }
    // The same for what the files *set*, spelled out, so a typo cannot hide in prose.
    for name in dockerfile.env().keys().filter(|n| n.starts_with("GPULAB_")) {
        assert!(
            serve.names.contains(name) || direct.contains(name),
            "docker/Dockerfile sets {name}"
        );
    }
    let compose = Compose::load();
    if let Some(Yaml::Map(env)) = compose.service_opt("environment") {
        for (name, _) in env {
            assert!(
                !name.starts_with("GPULAB_") || serve.names.contains(name),
                "docker/compose.yaml sets {name}"
            );
        }
    }
}

#[test]
fn env_example_names_real_settings_with_their_real_defaults() {
    let serve = ServeEnv::load();
    let example = EnvExample::load();
    let image_env = Dockerfile::load().env();
    for (name, value) in example.set.iter().chain(&example.commented) {
        if name.starts_with("GPULAB_") {
            assert!(
                serve.names.contains(name),
                "docker/.env.example sets {name}, which `gpulab serve` does not read"
            );
        }
        assert!(
            !image_env.contains_key(name),
            "docker/.env.example sets {name}={value}, but the image owns it (docker/Dockerfile ENV): \
             changing it would break the port mapping, the volume or NVRTC"
        );
    }
    for (name, shown) in &example.commented {
        if let Some(default) = serve.defaults.get(name) {
            assert_eq!(
                shown, default,
                "docker/.env.example shows `# {name}={shown}`, but the binary's default is {default}"
            );
        }
    }
    assert_eq!(
        example
            .set
            .get("GPULAB_INSTRUCTOR_TOKEN")
            .map(String::as_str),
        Some(""),
        "docker/.env.example must have an empty GPULAB_INSTRUCTOR_TOKEN= line (never a real token)"
    );
    // Every setting is documented: in .env.example, or fixed by the image.
    for name in &serve.names {
        assert!(
            example.text.contains(name.as_str()) || image_env.contains_key(name),
            "`gpulab serve` reads {name}, but docker/.env.example does not mention it"
        );
    }
}

#[test]
fn image_listens_where_compose_and_the_health_checks_look() {
    let dockerfile = Dockerfile::load();
    let compose = Compose::load();
    let env = dockerfile.env();
    let addr: SocketAddr = env
        .get("GPULAB_ADDR")
        .expect("docker/Dockerfile sets GPULAB_ADDR")
        .parse()
        .expect("GPULAB_ADDR is host:port");
    assert!(
        addr.ip().is_unspecified(),
        "GPULAB_ADDR must listen on all interfaces (0.0.0.0), not {addr}: Docker's port mapping reaches the container from outside"
    );
    let exposed = Dockerfile::one(dockerfile.runtime(), "EXPOSE");
    assert_eq!(
        exposed.trim_end_matches("/tcp"),
        addr.port().to_string(),
        "docker/Dockerfile: EXPOSE differs from GPULAB_ADDR"
    );
    let ports = compose.service("ports").seq();
    assert_eq!(ports.len(), 1, "docker/compose.yaml: one port mapping");
    let mapping = ports[0].str().trim_end_matches("/tcp");
    let container_port = mapping.rsplit(':').next().unwrap();
    assert!(
        mapping.contains(':'),
        "port mapping {mapping} needs HOST:CONTAINER"
    );
    assert_eq!(
        container_port,
        addr.port().to_string(),
        "docker/compose.yaml maps {mapping}, but the server listens on {addr}"
    );

    let healthcheck = Dockerfile::one(dockerfile.runtime(), "HEALTHCHECK");
    let (_, command) = healthcheck
        .split_once("CMD ")
        .expect("docker/Dockerfile: HEALTHCHECK … CMD …");
    let image_check = exec_form(command).join(" ");
    let compose_check = compose
        .service("healthcheck.test")
        .seq()
        .iter()
        .map(|v| v.str().to_string())
        .collect::<Vec<_>>();
    assert!(
        ["CMD", "CMD-SHELL"].contains(&compose_check[0].as_str()),
        "compose healthcheck.test starts with CMD or CMD-SHELL"
    );
    let (image_port, image_path) = health_url(&image_check);
    let (compose_port, compose_path) = health_url(&compose_check[1..].join(" "));
    assert_eq!(
        image_port,
        addr.port(),
        "docker/Dockerfile HEALTHCHECK port"
    );
    assert_eq!(
        compose_port,
        addr.port(),
        "docker/compose.yaml healthcheck port"
    );
    assert_eq!(
        image_path, compose_path,
        "the two health checks ask for different paths"
    );
    assert_eq!(image_path, "/healthz");
    assert!(
        image_check.starts_with("curl") || image_check.contains(" curl "),
        "the HEALTHCHECK uses curl"
    );
    assert!(
        dockerfile
            .apt_packages()
            .iter()
            .any(|p| p == "curl" || p.starts_with("curl=")),
        "the HEALTHCHECK runs curl, so the runtime stage must install it"
    );
}

#[tokio::test]
async fn health_check_path_is_served() {
    let (_, path) = health_url(&Dockerfile::one(
        Dockerfile::load().runtime(),
        "HEALTHCHECK",
    ));
    let app = spawn().await;
    let response = app.get(&path).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the Docker HEALTHCHECK asks for {path}, which the server answers with {}",
        response.status()
    );
}

#[test]
fn database_lives_on_the_volume() {
    let dockerfile = Dockerfile::load();
    let compose = Compose::load();
    let database = PathBuf::from(
        dockerfile
            .env()
            .get("GPULAB_DATABASE")
            .expect("docker/Dockerfile sets GPULAB_DATABASE"),
    );
    assert!(database.is_absolute(), "GPULAB_DATABASE must be absolute");
    let directory = database.parent().unwrap();
    let volumes = compose.service("volumes").seq();
    let mounted = volumes.iter().find_map(|v| {
        let mut parts = v.str().split(':');
        let (source, target) = (parts.next()?, parts.next()?);
        directory
            .starts_with(target)
            .then(|| (source.to_string(), target.to_string()))
    });
    let (source, target) = mounted.unwrap_or_else(|| {
        panic!(
            "docker/compose.yaml mounts no volume over {} (the database's folder): {volumes:?}",
            directory.display()
        )
    });
    assert!(
        !source.starts_with(['.', '/', '~']),
        "the database should be on a named volume, not the bind mount {source}"
    );
    assert!(
        compose.root.at("volumes").get(&source).is_some(),
        "volume {source} is not declared under the top-level `volumes:`"
    );
    for declared in Dockerfile::all(dockerfile.runtime(), "VOLUME") {
        let declared: Vec<String> = exec_form(&declared)
            .iter()
            .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect();
        assert!(
            declared.contains(&target),
            "docker/Dockerfile VOLUME {declared:?} differs from the compose mount {target}"
        );
    }
    assert_eq!(
        Dockerfile::one(dockerfile.runtime(), "WORKDIR"),
        target,
        "WORKDIR is the data folder, so relative paths land on the volume"
    );
}
