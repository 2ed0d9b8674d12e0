//! `docker/k8s/`: the Kubernetes manifests run what docker/compose.postgres.yaml runs
//! (the same commands, port, user, health routes and database image) and read their
//! secrets from the Secret that secret.yaml.example describes. Whether they are valid
//! Kubernetes objects is tests/lint-k8s.sh's job (the API schemas).

use super::binary::read;
use super::compose::{Yaml, duration_secs, yaml_documents};
use super::dockerfile::Dockerfile;
use super::postgres::{PostgresCompose, image_port, overridable_image, words};

const WEB: &str = "docker/k8s/web.yaml";
const WORKER: &str = "docker/k8s/worker.yaml";
const POSTGRES: &str = "docker/k8s/postgres.yaml";
const SECRET: &str = "docker/k8s/secret.yaml.example";

/// The object of `kind` named `name` in `file`.
fn object(file: &str, kind: &str, name: &str) -> Yaml {
    yaml_documents(file)
        .into_iter()
        .find(|document| {
            document.get("kind").map(Yaml::str) == Some(kind)
                && document
                    .get("metadata")
                    .and_then(|m| m.get("name"))
                    .map(Yaml::str)
                    == Some(name)
        })
        .unwrap_or_else(|| panic!("{file} has no {kind} {name}"))
}

/// The first container of a Deployment's or StatefulSet's pod template.
fn container<'a>(file: &str, workload: &'a Yaml) -> &'a Yaml {
    let containers = workload.at_in(file, "spec.template.spec.containers").seq();
    assert_eq!(containers.len(), 1, "{file}: one container per pod");
    &containers[0]
}

/// The `env` entry `name` of a container.
fn env_entry<'a>(file: &str, container: &'a Yaml, name: &str) -> &'a Yaml {
    container
        .at_in(file, "env")
        .seq()
        .iter()
        .find(|entry| entry.get("name").map(Yaml::str) == Some(name))
        .unwrap_or_else(|| panic!("{file}: the container sets no {name}"))
}

/// A probe's or Service's port, as a number: itself, or the container port of that name.
fn port_number(file: &str, container: &Yaml, port: &str) -> String {
    if port.chars().all(|c| c.is_ascii_digit()) {
        return port.to_string();
    }
    container
        .at_in(file, "ports")
        .seq()
        .iter()
        .find(|p| p.get("name").map(Yaml::str) == Some(port))
        .unwrap_or_else(|| panic!("{file}: no container port named {port}"))
        .at_in(file, "containerPort")
        .str()
        .to_string()
}

/// The Secret's name and the keys it holds.
fn secret() -> (String, Vec<String>) {
    let documents = yaml_documents(SECRET);
    let secret = documents
        .iter()
        .find(|d| d.get("kind").map(Yaml::str) == Some("Secret"))
        .unwrap_or_else(|| panic!("{SECRET} holds no Secret"));
    let data = secret.at_in(SECRET, "stringData");
    for key in data.keys() {
        assert_eq!(
            data.at_in(SECRET, key).str(),
            "",
            "{SECRET}: {key} must stay empty (never a real secret in the repository)"
        );
    }
    (
        secret.at_in(SECRET, "metadata.name").str().to_string(),
        data.keys().into_iter().map(str::to_string).collect(),
    )
}

/// Asserts that `name` comes from the Secret, under a key it holds.
fn from_secret(file: &str, container: &Yaml, name: &str) {
    let (secret_name, keys) = secret();
    let entry = env_entry(file, container, name);
    assert!(
        entry.get("value").is_none(),
        "{file}: {name} is written into the manifest; take it from the Secret"
    );
    let reference = entry.at_in(file, "valueFrom.secretKeyRef");
    assert_eq!(
        reference.at_in(file, "name").str(),
        secret_name,
        "{file}: {name} comes from another Secret than {SECRET}'s"
    );
    let key = reference.at_in(file, "key").str();
    assert!(
        keys.iter().any(|k| k == key),
        "{file}: {name} reads key {key}, which {SECRET} does not have ({keys:?})"
    );
}

/// The pod's user is the image's (docker/Dockerfile USER), and it may not become root.
fn runs_as_the_image_user(file: &str, workload: &Yaml) {
    let dockerfile = Dockerfile::load();
    let user = Dockerfile::one(dockerfile.runtime(), "USER");
    let uid = user.split(':').next().unwrap();
    let security = workload.at_in(file, "spec.template.spec.securityContext");
    assert_eq!(
        security.at_in(file, "runAsNonRoot").str(),
        "true",
        "{file}: runAsNonRoot"
    );
    assert_eq!(
        security.at_in(file, "runAsUser").str(),
        uid,
        "{file}: runAsUser differs from docker/Dockerfile's USER {user}"
    );
}

/// The pod's grace period covers the drain, as compose.yaml's stop_grace_period does.
fn drains_like_compose(file: &str, workload: &Yaml, compose: &PostgresCompose, service: &str) {
    let grace: u64 = workload
        .at_in(file, "spec.template.spec.terminationGracePeriodSeconds")
        .str()
        .parse()
        .expect("terminationGracePeriodSeconds is a number");
    let compose_grace = duration_secs(compose.service(service, "stop_grace_period").str());
    assert!(
        grace >= compose_grace,
        "{file}: terminationGracePeriodSeconds {grace} is shorter than the {compose_grace}s compose gives {service} to drain"
    );
}

#[test]
fn kubernetes_web_nodes_match_the_compose_web_service() {
    let compose = PostgresCompose::load();
    let deployment = object(WEB, "Deployment", "gpulab-web");
    let replicas: u32 = deployment
        .at_in(WEB, "spec.replicas")
        .str()
        .parse()
        .expect("replicas is a number");
    assert!(replicas >= 2, "{WEB}: at least 2 replicas");
    let web = container(WEB, &deployment);
    assert_eq!(
        words(web.at_in(WEB, "args")),
        words(compose.service("web", "command")),
        "{WEB}: args differ from the compose web service's command"
    );
    assert!(
        web.get("command").is_none(),
        "{WEB}: keep the image's entrypoint (gpulab); set args"
    );
    let port = image_port().to_string();
    let ports = web.at_in(WEB, "ports").seq();
    assert_eq!(ports.len(), 1, "{WEB}: one container port");
    assert_eq!(
        ports[0].at_in(WEB, "containerPort").str(),
        port,
        "{WEB}: containerPort differs from the image's GPULAB_ADDR"
    );
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = web.at_in(WEB, &format!("{probe}.httpGet"));
        assert_eq!(get.at_in(WEB, "path").str(), path, "{WEB}: {probe} path");
        assert_eq!(
            port_number(WEB, web, get.at_in(WEB, "port").str()),
            port,
            "{WEB}: {probe} port"
        );
    }
    from_secret(WEB, web, "GPULAB_DATABASE");
    from_secret(WEB, web, "GPULAB_INSTRUCTOR_TOKEN");
    runs_as_the_image_user(WEB, &deployment);
    drains_like_compose(WEB, &deployment, &compose, "web");

    // The Service selects these pods and sends to their port.
    let service = object(WEB, "Service", "gpulab-web");
    let labels = deployment.at_in(WEB, "spec.template.metadata.labels");
    let Yaml::Map(selector) = service.at_in(WEB, "spec.selector") else {
        panic!("{WEB}: the Service's selector is a mapping");
    };
    for (key, value) in selector {
        assert_eq!(
            labels.get(key),
            Some(value),
            "{WEB}: the Service selects {key}={value:?}, which the web pods do not carry"
        );
    }
    let service_ports = service.at_in(WEB, "spec.ports").seq();
    assert_eq!(service_ports.len(), 1, "{WEB}: the Service has one port");
    assert_eq!(
        port_number(WEB, web, service_ports[0].at_in(WEB, "targetPort").str()),
        port,
        "{WEB}: the Service's targetPort"
    );
}

#[test]
fn kubernetes_workers_match_the_compose_workers() {
    let compose = PostgresCompose::load();
    let deployment = object(WORKER, "Deployment", "gpulab-worker");
    let worker = container(WORKER, &deployment);
    let (first, _) = compose
        .workers()
        .into_iter()
        .next()
        .expect("compose.postgres.yaml has workers");
    assert_eq!(
        words(worker.at_in(WORKER, "args")),
        words(compose.service(&first, "command")),
        "{WORKER}: args differ from the compose workers' command (a pod sees its one GPU as 0)"
    );
    assert!(
        worker.get("command").is_none(),
        "{WORKER}: keep the image's entrypoint (gpulab); set args"
    );
    let gpus = worker
        .at_in(WORKER, "resources.limits")
        .get("nvidia.com/gpu")
        .unwrap_or_else(|| panic!("{WORKER}: resources.limits has no nvidia.com/gpu"));
    assert_eq!(gpus.str(), "1", "{WORKER}: one GPU per worker pod");
    assert!(
        worker.get("ports").is_none() && worker.get("readinessProbe").is_none(),
        "{WORKER}: a worker serves no HTTP"
    );
    from_secret(WORKER, worker, "GPULAB_DATABASE");
    runs_as_the_image_user(WORKER, &deployment);
    drains_like_compose(WORKER, &deployment, &compose, &first);
    // With every GPU taken, a surge pod would wait for a GPU forever.
    assert_eq!(
        deployment
            .at_in(WORKER, "spec.strategy.rollingUpdate.maxSurge")
            .str(),
        "0",
        "{WORKER}: maxSurge 0, so a rollout frees a GPU before it needs one"
    );
}

#[test]
fn kubernetes_postgres_matches_the_compose_postgres() {
    let compose = PostgresCompose::load();
    let statefulset = object(POSTGRES, "StatefulSet", "gpulab-postgres");
    let postgres = container(POSTGRES, &statefulset);
    assert_eq!(
        postgres.at_in(POSTGRES, "image").str(),
        overridable_image(compose.service("postgres", "image").str(), "POSTGRES_IMAGE"),
        "{POSTGRES}: the same PostgreSQL image as compose.postgres.yaml"
    );
    from_secret(POSTGRES, postgres, "POSTGRES_PASSWORD");
    let probe = words(postgres.at_in(POSTGRES, "readinessProbe.exec.command"));
    assert_eq!(
        probe[0], "pg_isready",
        "{POSTGRES}: the readiness probe runs pg_isready"
    );
    // The Service the Secret's example URL names.
    object(POSTGRES, "Service", "gpulab-postgres");
    assert!(
        read(SECRET).contains("@gpulab-postgres:5432/"),
        "{SECRET}: the example URL should name the gpulab-postgres Service"
    );
}
