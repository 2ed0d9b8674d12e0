//! `docker/compose.postgres.yaml`, the PostgreSQL setup for several GPUs (issue 17): a
//! `postgres` service, `web` replicas behind an nginx `proxy` (`docker/proxy.conf`) and
//! one `worker-gpuN` per GPU. Read like compose.yaml, with its `<<` merge keys applied as
//! Compose applies them, and checked against compose.yaml, the Dockerfile, the binary's
//! `serve` and `worker` flags and docker/.env.example.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use super::binary::{ServeEnv, read};
use super::compose::{Compose, Yaml, duration_secs, parse_yaml_merged};
use super::dockerfile::{Dockerfile, health_url};
use super::files::EnvExample;
use crate::support::repo_path;

pub(super) const FILE: &str = "docker/compose.postgres.yaml";
const PROXY_CONF: &str = "docker/proxy.conf";

pub(super) struct PostgresCompose {
    pub root: Yaml,
}

impl PostgresCompose {
    pub(super) fn load() -> Self {
        Self {
            root: parse_yaml_merged(&read(FILE)),
        }
    }

    pub(super) fn services(&self) -> Vec<&str> {
        self.root.at_in(FILE, "services").keys()
    }

    /// `services.NAME.PATH`, or a failure naming the file.
    pub(super) fn service(&self, name: &str, path: &str) -> &Yaml {
        self.root.at_in(FILE, &format!("services.{name}.{path}"))
    }

    /// `services.NAME.PATH` when it is there.
    pub(super) fn service_opt(&self, name: &str, path: &str) -> Option<&Yaml> {
        let service = self.root.get("services")?.get(name)?;
        path.split('.')
            .try_fold(service, |value, key| value.get(key))
    }

    /// A variable the service sets in its `environment` mapping.
    pub(super) fn env(&self, name: &str, variable: &str) -> &str {
        self.service(name, &format!("environment.{variable}")).str()
    }

    /// The `worker-gpuN` services, each with its N.
    pub(super) fn workers(&self) -> Vec<(String, String)> {
        self.services()
            .into_iter()
            .filter_map(|name| {
                let id = name.strip_prefix("worker-gpu")?;
                Some((name.to_string(), id.to_string()))
            })
            .collect()
    }

    /// `gpulab serve --help` or `gpulab worker --help`, for the subcommand a service runs.
    fn subcommand_help<'a>(
        &self,
        name: &str,
        serve: &'a ServeEnv,
        worker: &'a ServeEnv,
    ) -> &'a ServeEnv {
        match words(self.service(name, "command"))
            .first()
            .map(String::as_str)
        {
            Some("serve") => serve,
            Some("worker") => worker,
            other => panic!("{FILE}: {name} runs {other:?}, neither serve nor worker"),
        }
    }
}

/// A command in exec form (a list) or shell form (one string), as words.
pub(super) fn words(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::Seq(items) => items.iter().map(|item| item.str().to_string()).collect(),
        Yaml::Str(text) => text.split_whitespace().map(str::to_string).collect(),
        Yaml::Map(_) => panic!("a command is a list or a string, not {value:?}"),
    }
}

/// The port the image's server listens on (GPULAB_ADDR in docker/Dockerfile).
pub(super) fn image_port() -> u16 {
    let env = Dockerfile::load().env();
    let addr: SocketAddr = env
        .get("GPULAB_ADDR")
        .expect("docker/Dockerfile sets GPULAB_ADDR")
        .parse()
        .expect("GPULAB_ADDR is host:port");
    addr.port()
}

/// NAME when `text` is exactly a required interpolation, `${NAME:?message}`: Compose then
/// refuses to run while NAME is unset or empty. None for anything else (a literal, or
/// `${NAME:-default}`, which would start with the default).
fn required_variable(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    let (name, _) = inner.split_once(":?")?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// What `text` becomes when no variable is set: itself, the default of
/// `${NAME:-default}`, or None for any other interpolation.
fn value_by_default(text: &str) -> Option<&str> {
    match text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
        Some(inner) => inner.split_once(":-").map(|(_, default)| default),
        None => Some(text),
    }
}

/// `postgres://USER:PASSWORD@HOST:PORT/DATABASE`, split; the parts may be interpolations.
#[derive(Debug)]
struct DatabaseUrl {
    user: String,
    password: String,
    host: String,
    port: String,
    database: String,
}

impl DatabaseUrl {
    fn parse(service: &str, url: &str) -> Self {
        fn bad(service: &str, url: &str, what: &str) -> ! {
            panic!("{FILE}: {service}'s GPULAB_DATABASE {url:?} {what}")
        }
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .unwrap_or_else(|| bad(service, url, "is not a postgres:// URL"));
        // The password's error message may hold '/' and ':', but no '@'.
        let (credentials, location) = rest
            .rsplit_once('@')
            .unwrap_or_else(|| bad(service, url, "has no USER:PASSWORD@"));
        let (user, password) = credentials
            .split_once(':')
            .unwrap_or_else(|| bad(service, url, "has no password"));
        let (address, database) = location
            .rsplit_once('/')
            .unwrap_or_else(|| bad(service, url, "names no database"));
        let (host, port) = address
            .rsplit_once(':')
            .unwrap_or_else(|| bad(service, url, "has no HOST:PORT"));
        Self {
            user: user.to_string(),
            password: password.to_string(),
            host: host.to_string(),
            port: port.to_string(),
            database: database.to_string(),
        }
    }
}

/// `docker/proxy.conf`, the nginx server block in front of the web replicas.
struct ProxyConf {
    listen: u16,
    /// What `proxy_pass` sends to, with a `set` variable resolved.
    upstream: String,
    /// Whether `proxy_pass` names a variable, which nginx resolves at request time.
    upstream_is_variable: bool,
    resolver: String,
}

impl ProxyConf {
    fn load() -> Self {
        // `${NAME}`, which the nginx image fills in from the environment at start, is read
        // as `$env:NAME`: its braces are no block.
        let mut text = read(PROXY_CONF);
        while let Some(start) = text.find("${") {
            let end = start + text[start..].find('}').expect("an unclosed ${");
            let name = text[start + 2..end].to_string();
            text.replace_range(start..=end, &format!("$env:{name}"));
        }
        let without_comments: Vec<&str> = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or(""))
            .collect();
        // Directives end with ';'; a block's opening or closing brace ends the words of
        // the one before it.
        let directives: Vec<Vec<String>> = without_comments
            .join(" ")
            .split(';')
            .map(|chunk| {
                chunk
                    .rsplit(['{', '}'])
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<String>>()
            })
            .filter(|words| !words.is_empty())
            .collect();
        let find = |name: &str| -> Vec<&Vec<String>> {
            directives
                .iter()
                .filter(|words| words[0] == name && words.len() > 1)
                .collect()
        };
        let listen = find("listen");
        assert_eq!(listen.len(), 1, "{PROXY_CONF}: one `listen` expected");
        let listen = listen[0][1]
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{PROXY_CONF}: `listen {}` is not a port", listen[0][1]));
        let pass = find("proxy_pass");
        assert_eq!(pass.len(), 1, "{PROXY_CONF}: one `proxy_pass` expected");
        let target = pass[0][1].clone();
        let upstream_is_variable = target.starts_with('$');
        let upstream = if upstream_is_variable {
            find("set")
                .into_iter()
                .find(|words| words[1] == target && words.len() == 3)
                .unwrap_or_else(|| panic!("{PROXY_CONF}: no `set {target} URL;`"))[2]
                .clone()
        } else {
            target
        };
        let resolver = find("resolver")
            .first()
            .map(|words| words[1..].join(" "))
            .unwrap_or_default();
        Self {
            listen,
            upstream,
            upstream_is_variable,
            resolver,
        }
    }
}

#[test]
fn postgres_compose_runs_the_image_and_settings_of_compose_yaml() {
    let one_box = Compose::load();
    let compose = PostgresCompose::load();
    let image = one_box.service("image").str();
    let mut gpulab: Vec<&str> = compose
        .services()
        .into_iter()
        .filter(|name| {
            compose
                .service_opt(name, "image")
                .is_some_and(|i| i.str() == image)
        })
        .collect();
    gpulab.sort_unstable();
    let mut expected: Vec<String> = compose
        .workers()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    expected.push("web".to_string());
    expected.sort_unstable();
    assert_eq!(
        gpulab, expected,
        "{FILE}: web and every worker-gpuN, and nothing else, run {image}, the image compose.yaml builds"
    );
    for name in &gpulab {
        for key in [
            "build.context",
            "build.dockerfile",
            "env_file",
            "init",
            "restart",
        ] {
            assert_eq!(
                compose.service(name, key),
                one_box.service(key),
                "{FILE}: {name}'s `{key}` differs from compose.yaml's"
            );
        }
        assert!(
            duration_secs(compose.service(name, "stop_grace_period").str())
                >= duration_secs(one_box.service("stop_grace_period").str()),
            "{FILE}: {name} gets less time to drain than compose.yaml's stop_grace_period"
        );
        assert!(
            compose.service_opt(name, "container_name").is_none(),
            "{FILE}: {name} sets container_name, which replicas (and `--scale`) cannot share"
        );
    }

    // Its own project and volume: `down -v` on one setup never wipes the other's data.
    let project = compose.root.at_in(FILE, "name").str();
    assert_ne!(
        project,
        one_box.root.at("name").str(),
        "{FILE}: a project name of its own"
    );
    let volume_names = |root: &Yaml| -> BTreeSet<String> {
        let Some(Yaml::Map(volumes)) = root.get("volumes") else {
            return BTreeSet::new();
        };
        volumes
            .iter()
            .map(|(key, volume)| {
                volume
                    .get("name")
                    .map_or_else(|| key.clone(), |name| name.str().to_string())
            })
            .collect()
    };
    let shared: Vec<String> = volume_names(&compose.root)
        .intersection(&volume_names(&one_box.root))
        .cloned()
        .collect();
    assert!(
        shared.is_empty(),
        "{FILE} and docker/compose.yaml share the volumes {shared:?}"
    );
}

/// The image a service runs unless `variable` (from docker/.env or the shell) names
/// another: `image` is `${VARIABLE:-DEFAULT}`, and docker/.env.example mentions it.
pub(super) fn overridable_image<'a>(image: &'a str, variable: &str) -> &'a str {
    let default = image
        .strip_prefix(&format!("${{{variable}:-"))
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap_or_else(|| panic!("{FILE}: image {image} should be ${{{variable}:-IMAGE}}"));
    assert!(
        read("docker/.env.example").contains(&format!("# {variable}={default}")),
        "docker/.env.example should show `# {variable}={default}`"
    );
    default
}

#[test]
fn postgres_is_pinned_healthy_and_keeps_its_data_on_a_named_volume() {
    let compose = PostgresCompose::load();
    let image = overridable_image(compose.service("postgres", "image").str(), "POSTGRES_IMAGE");
    let tag = image.strip_prefix("postgres:").unwrap_or_else(|| {
        panic!("{FILE}: postgres runs {image}, not the official postgres image")
    });
    assert!(
        tag.starts_with(|c: char| c.is_ascii_digit()),
        "{FILE}: pin postgres to a major version (postgres:16), not {image}: a newer major version cannot open the older one's data"
    );

    let user = compose.env("postgres", "POSTGRES_USER");
    let database = compose.env("postgres", "POSTGRES_DB");
    let check = words(compose.service("postgres", "healthcheck.test")).join(" ");
    assert!(
        check.contains("pg_isready"),
        "{FILE}: postgres's health check should run pg_isready, not {check:?}"
    );
    assert!(
        check.contains(&format!("-U {user}")) && check.contains(&format!("-d {database}")),
        "{FILE}: postgres's health check should ask for user {user} and database {database}: {check:?}"
    );

    let volumes = compose.service("postgres", "volumes").seq();
    let source = volumes
        .iter()
        .find_map(|volume| {
            let (source, rest) = volume.str().split_once(':')?;
            (rest.split(':').next()? == "/var/lib/postgresql/data").then_some(source)
        })
        .unwrap_or_else(|| {
            panic!("{FILE}: no volume on /var/lib/postgresql/data (postgres:16's data folder): {volumes:?}")
        });
    assert!(
        !source.starts_with(['.', '/', '~']),
        "{FILE}: the database should be on a named volume, not the bind mount {source}"
    );
    assert!(
        compose.root.at_in(FILE, "volumes").get(source).is_some(),
        "{FILE}: volume {source} is not declared under the top-level `volumes:`"
    );

    let password = compose.env("postgres", "POSTGRES_PASSWORD");
    assert_eq!(
        required_variable(password),
        Some("POSTGRES_PASSWORD"),
        "{FILE}: POSTGRES_PASSWORD should be `${{POSTGRES_PASSWORD:?message}}`, so Compose refuses to start without one, not {password:?}"
    );
    assert!(
        compose.service_opt("postgres", "ports").is_none(),
        "{FILE}: postgres publishes a port; only the services of this file need it"
    );
    assert!(
        compose.service_opt("postgres", "env_file").is_none(),
        "{FILE}: postgres reads docker/.env, which holds the instructor token"
    );
}

#[test]
fn web_replicas_run_the_web_role_behind_the_proxy_once_postgres_is_healthy() {
    let compose = PostgresCompose::load();
    let serve = ServeEnv::load();
    let port = image_port();

    assert_eq!(
        words(compose.service("web", "command")),
        ["serve", "--role", "web"],
        "{FILE}: web runs `serve --role web`"
    );
    assert!(
        serve.has_flag("--role"),
        "{FILE} runs `serve --role web`, but `gpulab serve --help` has no --role:\n{}",
        serve.help
    );
    assert_eq!(
        compose
            .service("web", "depends_on.postgres.condition")
            .str(),
        "service_healthy",
        "{FILE}: web should wait for postgres to be healthy"
    );
    let replicas: u32 = compose
        .service("web", "deploy.replicas")
        .str()
        .parse()
        .expect("deploy.replicas is a number");
    assert!(
        replicas >= 2,
        "{FILE}: web has {replicas} replica(s); at least 2"
    );
    assert!(
        compose.service_opt("web", "ports").is_none(),
        "{FILE}: web publishes a port, which its replicas cannot all bind: the proxy publishes it"
    );
    let check = words(compose.service("web", "healthcheck.test"));
    let (check_port, check_path) = health_url(&check[1..].join(" "));
    assert_eq!(check_port, port, "{FILE}: web's health check port");
    assert_eq!(
        check_path, "/readyz",
        "{FILE}: web's health check should ask /readyz, which fails while the database is unreachable"
    );
    assert!(
        read("server/web/router.rs").contains("\"/readyz\""),
        "the router no longer serves /readyz, which {FILE} and docker/k8s/web.yaml ask for"
    );

    // The proxy: the students' one address, passing every request on to `web`.
    let proxy = ProxyConf::load();
    let ports = compose.service("proxy", "ports").seq();
    assert_eq!(ports.len(), 1, "{FILE}: the proxy publishes one port");
    let mapping = ports[0].str().trim_end_matches("/tcp");
    assert!(
        mapping.contains(':'),
        "{FILE}: port mapping {mapping} needs HOST:CONTAINER"
    );
    assert_eq!(
        mapping.rsplit(':').next().unwrap(),
        proxy.listen.to_string(),
        "{FILE} maps {mapping}, but {PROXY_CONF} listens on {}",
        proxy.listen
    );
    // proxy.conf is a template the nginx image fills in at start, with the name server
    // that proxy-resolver.envsh (run by the image's entrypoint first) finds.
    let mounts: Vec<&str> = compose
        .service("proxy", "volumes")
        .seq()
        .iter()
        .map(Yaml::str)
        .collect();
    assert!(
        mounts.contains(&"./proxy.conf:/etc/nginx/templates/default.conf.template:ro"),
        "{FILE}: the proxy should mount {PROXY_CONF} as /etc/nginx/templates/default.conf.template: {mounts:?}"
    );
    let envsh = mounts
        .iter()
        .find_map(|m| m.strip_prefix("./proxy-resolver.envsh:/docker-entrypoint.d/"))
        .unwrap_or_else(|| {
            panic!("{FILE}: the proxy should mount proxy-resolver.envsh into /docker-entrypoint.d/: {mounts:?}")
        });
    assert!(
        envsh.ends_with(".envsh:ro") && envsh[..2].chars().all(|c| c.is_ascii_digit()),
        "{FILE}: /docker-entrypoint.d/{envsh}: NN-name.envsh, read-only, so the entrypoint sources it in order"
    );
    assert!(
        &envsh[..2] > "15" && &envsh[..2] < "20",
        "{FILE}: /docker-entrypoint.d/{envsh} must run after the image's 15-local-resolvers and before 20-envsubst-on-templates"
    );
    let script = repo_path("docker/proxy-resolver.envsh");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert!(
            mode & 0o111 != 0,
            "docker/proxy-resolver.envsh must be executable: the nginx entrypoint skips it otherwise"
        );
    }
    assert!(
        read("docker/proxy-resolver.envsh").contains("export PROXY_RESOLVER"),
        "docker/proxy-resolver.envsh should export PROXY_RESOLVER"
    );
    let proxy_image = overridable_image(compose.service("proxy", "image").str(), "PROXY_IMAGE");
    assert!(
        proxy_image
            .split_once(':')
            .is_some_and(|(_, tag)| tag.starts_with(|c: char| c.is_ascii_digit())),
        "{FILE}: pin the proxy's image to a version, not {proxy_image}"
    );
    assert_eq!(
        proxy.upstream,
        format!("http://web:{port}"),
        "{PROXY_CONF} should pass requests to the web service on the server's port"
    );
    assert!(
        proxy.upstream_is_variable && proxy.resolver.starts_with("$env:PROXY_RESOLVER "),
        "{PROXY_CONF}: proxy_pass should name a variable and `resolver` the network's name server \
         (${{PROXY_RESOLVER}}): with a plain name nginx looks `web` up once, at start, and never sees a replica that restarts"
    );
}

#[test]
fn each_worker_reserves_one_gpu_of_its_own() {
    let compose = PostgresCompose::load();
    let worker = ServeEnv::worker();
    let workers = compose.workers();
    assert!(
        workers.len() >= 2,
        "{FILE}: one worker-gpuN per GPU, at least worker-gpu0 and worker-gpu1: {workers:?}"
    );
    assert!(
        worker.has_flag("--gpu"),
        "{FILE} runs `worker --gpu 0`, but `gpulab worker --help` has no --gpu:\n{}",
        worker.help
    );
    let mut ids = BTreeSet::new();
    for (name, id) in &workers {
        assert!(
            !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()),
            "{FILE}: {name}: name a worker worker-gpuN, N the host's id of its GPU"
        );
        let devices = compose
            .service(name, "deploy.resources.reservations.devices")
            .seq();
        assert_eq!(devices.len(), 1, "{FILE}: {name} reserves one device entry");
        let device = &devices[0];
        assert_eq!(
            device.at_in(FILE, "driver").str(),
            "nvidia",
            "{FILE}: {name}'s driver"
        );
        assert!(
            device.get("count").is_none(),
            "{FILE}: {name} reserves a `count`, which takes any free GPU: reserve GPU {id} by device_ids"
        );
        let reserved: Vec<&str> = device
            .at_in(FILE, "device_ids")
            .seq()
            .iter()
            .map(Yaml::str)
            .collect();
        assert_eq!(
            reserved,
            [id.as_str()],
            "{FILE}: {name} reserves exactly GPU {id}"
        );
        assert!(
            device
                .at_in(FILE, "capabilities")
                .seq()
                .contains(&Yaml::Str("gpu".into())),
            "{FILE}: {name}'s reservation needs capabilities: [gpu]"
        );
        assert!(
            ids.insert(id.clone()),
            "{FILE}: two workers reserve GPU {id}"
        );

        // The container sees only the GPU it reserved, and CUDA and NVML number it 0
        // there; `--gpu {id}` would point the worker at a GPU it cannot see.
        assert_eq!(
            words(compose.service(name, "command")),
            ["worker", "--gpu", "0"],
            "{FILE}: {name} sees GPU {id} as its device 0"
        );
        let worker_name = compose.env(name, "GPULAB_WORKER_NAME");
        assert!(
            worker_name.ends_with(&format!("-gpu{id}")),
            "{FILE}: {name}'s GPULAB_WORKER_NAME {worker_name:?} should end in -gpu{id}, the host's GPU"
        );
        assert_eq!(
            compose.service(name, "depends_on.postgres.condition").str(),
            "service_healthy",
            "{FILE}: {name} should wait for postgres to be healthy"
        );
        assert_eq!(
            compose.service(name, "healthcheck.disable").str(),
            "true",
            "{FILE}: {name} listens on no port, so the image's HTTP health check would call it unhealthy"
        );
        assert!(
            compose.service_opt(name, "ports").is_none(),
            "{FILE}: {name} publishes a port; a worker serves no HTTP"
        );
        if let Some(replicas) = compose.service_opt(name, "deploy.replicas") {
            assert_eq!(
                replicas.str(),
                "1",
                "{FILE}: replicas of {name} would share GPU {id}"
            );
        }
    }
}

#[test]
fn database_url_comes_from_the_environment() {
    let compose = PostgresCompose::load();
    let serve = ServeEnv::load();
    let worker = ServeEnv::worker();
    let user = compose.env("postgres", "POSTGRES_USER");
    let database = compose.env("postgres", "POSTGRES_DB");
    let password = required_variable(compose.env("postgres", "POSTGRES_PASSWORD"))
        .expect("postgres's POSTGRES_PASSWORD is a required variable");

    let mut services = vec!["web".to_string()];
    services.extend(compose.workers().into_iter().map(|(name, _)| name));
    let mut urls = BTreeSet::new();
    for name in &services {
        let url = compose.env(name, "GPULAB_DATABASE");
        let parsed = DatabaseUrl::parse(name, url);
        assert_eq!(parsed.user, user, "{FILE}: {name}'s database user");
        assert_eq!(parsed.database, database, "{FILE}: {name}'s database name");
        assert_eq!(parsed.port, "5432", "{FILE}: {name}'s database port");
        assert_eq!(
            required_variable(&parsed.password),
            Some(password),
            "{FILE}: {name}'s GPULAB_DATABASE should take its password from `${{{password}:?…}}`, as postgres does"
        );
        assert_eq!(
            value_by_default(&parsed.host),
            Some("postgres"),
            "{FILE}: {name}'s database host should be (default to) the postgres service"
        );
        let command = words(compose.service(name, "command"));
        assert!(
            !command
                .iter()
                .any(|word| word.starts_with("--database") || word.contains("://")),
            "{FILE}: {name} passes the database on its command line; GPULAB_DATABASE sets it: {command:?}"
        );
        // Every GPULAB_ variable a service sets is one its subcommand reads.
        let help = compose.subcommand_help(name, &serve, &worker);
        let Yaml::Map(environment) = compose.service(name, "environment") else {
            panic!("{FILE}: {name}'s environment should be a mapping");
        };
        for (variable, _) in environment {
            assert!(
                !variable.starts_with("GPULAB_") || help.names.contains(variable),
                "{FILE}: {name} sets {variable}, which its subcommand does not read ({:?})",
                help.names
            );
        }
        urls.insert(url.to_string());
    }
    assert_eq!(
        urls.len(),
        1,
        "{FILE}: web and the workers should share one database: {urls:?}"
    );

    let example = EnvExample::load();
    assert_eq!(
        example.set.get(password).map(String::as_str),
        Some(""),
        "docker/.env.example should have an empty `{password}=` line: never a real password, and \
         Compose refuses to start until the instructor sets one"
    );
}

#[test]
fn readme_explains_the_postgres_setup() {
    let readme = read("docker/README.md");
    for needed in [
        format!("-f {FILE}"),
        "gpulab db copy".to_string(),
        "gpulab serve --role web".to_string(),
        "gpulab worker --gpu".to_string(),
        "tests/lint-k8s.sh".to_string(),
    ] {
        assert!(
            readme.contains(&needed),
            "docker/README.md should show `{needed}`"
        );
    }
}

#[test]
fn the_postgres_helpers_read_what_they_claim_to() {
    assert_eq!(required_variable("${PW:?set PW}"), Some("PW"));
    assert_eq!(required_variable("${PW:-weak}"), None);
    assert_eq!(required_variable("${PW?set}"), None);
    assert_eq!(required_variable("hunter2"), None);
    assert_eq!(value_by_default("${HOST:-postgres}"), Some("postgres"));
    assert_eq!(value_by_default("postgres"), Some("postgres"));
    assert_eq!(value_by_default("${HOST}"), None);
    let url = DatabaseUrl::parse(
        "web",
        "postgres://gpulab:${PW:?set PW in docker/.env}@${HOST:-postgres}:5432/gpulab",
    );
    assert_eq!(
        (url.user.as_str(), url.password.as_str(), url.host.as_str()),
        (
            "gpulab",
            "${PW:?set PW in docker/.env}",
            "${HOST:-postgres}"
        )
    );
    assert_eq!(
        (url.port.as_str(), url.database.as_str()),
        ("5432", "gpulab")
    );
    assert_eq!(
        words(&Yaml::Str("worker --gpu 0".into())),
        ["worker", "--gpu", "0"]
    );
}
