//! The binary's real configuration, and what the image build reads: `gpulab serve
//! --help` parsed for every `GPULAB_*` variable and its default, the variables the server
//! reads directly, and every file the compiler embeds (`include_str!`, rust-embed
//! folders, askama's template folders).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use super::files::EnvExample;
use crate::support::repo_path;

/// What `gpulab serve --help` (or another subcommand's help) says about the environment:
/// every variable and its default, and the help text itself for its flags.
pub(super) struct ServeEnv {
    pub names: BTreeSet<String>,
    pub defaults: BTreeMap<String, String>,
    pub help: String,
}

impl ServeEnv {
    pub(super) fn load() -> Self {
        let parsed = Self::of(&["serve"]);
        assert!(
            parsed.names.contains("GPULAB_ADDR") && parsed.names.contains("GPULAB_DATABASE"),
            "could not read the env names from `gpulab serve --help`:\n{}",
            parsed.help
        );
        parsed
    }

    /// What `gpulab worker --help` says: the GPU worker of the PostgreSQL setup
    /// (docker/compose.postgres.yaml, docker/k8s/worker.yaml).
    pub(super) fn worker() -> Self {
        let parsed = Self::of(&["worker"]);
        assert!(
            parsed.names.contains("GPULAB_GPU") && parsed.names.contains("GPULAB_DATABASE"),
            "`gpulab worker --help` names no GPULAB_GPU and GPULAB_DATABASE:\n{}",
            parsed.help
        );
        parsed
    }

    /// `gpulab ARGS --help`, parsed.
    fn of(args: &[&str]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gpulab"));
        command.args(args).arg("--help");
        // clap prints a variable's current value in the help: clear ours so the help
        // shows the binary's defaults, not this shell's settings.
        for (name, _) in std::env::vars() {
            if name.starts_with("GPULAB_") {
                command.env_remove(name);
            }
        }
        let output = command.output().expect("gpulab runs");
        assert!(
            output.status.success(),
            "gpulab {} --help failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        parse_serve_help(&String::from_utf8(output.stdout).unwrap())
    }

    /// Whether the help lists `flag` (`--role`), alone or after its short form (`-r, --role`).
    pub(super) fn has_flag(&self, flag: &str) -> bool {
        self.help.lines().any(|line| {
            let line = line.trim_start();
            let line = match line.split_once(", ") {
                Some((short, long)) if short.len() == 2 && short.starts_with('-') => long,
                _ => line,
            };
            line.strip_prefix(flag)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '=']))
        })
    }

    /// The value a variable has in the container: set (uncommented) in .env.example,
    /// else the binary's default.
    pub(super) fn effective(&self, name: &str, example: &EnvExample) -> Option<u64> {
        example
            .set
            .get(name)
            .or_else(|| self.defaults.get(name))
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
            })
    }
}

/// Reads `[env: NAME=…]` / `[env: NAME]` and the `[default: …]` that follows it. clap
/// puts them on lines of their own (long help, as `serve` has) or at the end of the
/// description line (short help, as `worker` has).
pub(super) fn parse_serve_help(help: &str) -> ServeEnv {
    let mut names = BTreeSet::new();
    let mut defaults = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in help.lines().map(str::trim) {
        if line.starts_with('-') {
            current = None;
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find('[') {
            rest = &rest[at..];
            if let Some(env) = rest.strip_prefix("[env: ") {
                let name: String = env
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                names.insert(name.clone());
                current = Some(name);
            } else if let Some(default) = rest.strip_prefix("[default: ")
                && let Some(name) = current.take()
            {
                // Up to the next `] [` (another bracket follows), else the line's last `]`.
                let value = default.split("] [").next().unwrap_or_default();
                defaults.insert(name, value.trim_end_matches(']').to_string());
            }
            rest = &rest[1..];
        }
    }
    ServeEnv {
        names,
        defaults,
        help: help.to_string(),
    }
}

/// Environment variables the server reads directly (`std::env::var("GPULAB_…")`) rather
/// than through a `serve` flag, e.g. GPULAB_CUDA_INCLUDE for NVRTC's headers.
pub(super) fn variables_read_by_the_server() -> BTreeSet<String> {
    names_read("server", "rs", "env::var(\"")
}

/// Environment variables the image's own test scripts read (`${GPULAB_…`), e.g.
/// GPULAB_IMAGE_BIN in tests/image/build.sh: the guide may name them for whoever builds
/// the image by hand, but only as the scripts really read them.
pub(super) fn variables_read_by_the_image_scripts() -> BTreeSet<String> {
    names_read("tests/image", "sh", "${")
}

/// Every `GPULAB_…` name written right after `read` (the reading call or expansion) in
/// the `.extension` files under `dir`.
fn names_read(dir: &str, extension: &str, read: &str) -> BTreeSet<String> {
    let marker = format!("{read}GPULAB_");
    let mut names = BTreeSet::new();
    for file in files_under(&repo_path(dir)) {
        if file.extension().is_some_and(|e| e == extension) {
            let text = std::fs::read_to_string(file).unwrap();
            for (at, _) in text.match_indices(&marker) {
                let name: String = text[at + read.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                names.insert(name);
            }
        }
    }
    names
}

/// Every `GPULAB_…` name in `text`; prefixes written as a family (`GPULAB_*`,
/// `GPULAB_MAX_*`) are left out.
pub(super) fn gpulab_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("GPULAB_") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.ends_with('_') {
            names.insert(name);
        }
    }
    names
}

pub(super) fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_path(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

pub(super) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `path` relative to the repository, with `/` separators.
pub(super) fn relative(path: &Path) -> String {
    path.strip_prefix(repo_path(""))
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Resolves `.` and `..` without touching the file system.
pub(super) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Everything the compiler reads besides `server/*.rs`: `include_str!`/`include_bytes!`
/// files, rust-embed `#[folder]`s and askama's template folders.
pub(super) fn embedded_paths() -> Vec<PathBuf> {
    let root = repo_path("");
    let mut paths = Vec::new();
    for file in files_under(&repo_path("server")) {
        if file.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for macro_name in ["include_str!(\"", "include_bytes!(\""] {
            for (at, _) in text.match_indices(macro_name) {
                let rest = &text[at + macro_name.len()..];
                let target = &rest[..rest.find('"').unwrap()];
                paths.push(normalise(&file.parent().unwrap().join(target)));
            }
        }
        for marker in ["#[folder = \"", "config = \""] {
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                paths.push(normalise(&root.join(&rest[..rest.find('"').unwrap()])));
            }
        }
    }
    // askama's config names its template folders, relative to the crate root.
    let configs: Vec<PathBuf> = paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .cloned()
        .collect();
    for config in configs {
        let table: toml::Table = std::fs::read_to_string(config).unwrap().parse().unwrap();
        if let Some(dirs) = table
            .get("general")
            .and_then(|g| g.get("dirs"))
            .and_then(|d| d.as_array())
        {
            paths.extend(dirs.iter().map(|d| root.join(d.as_str().unwrap())));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

// ---------------------------------------------------------------------------------------

#[test]
fn the_help_and_name_readers_read_what_they_claim_to() {
    let help = parse_serve_help(
        "      --addr <ADDR>\n          x\n          [env: GPULAB_ADDR=]\n          [default: 127.0.0.1:8000]\n      --token <T>\n          [env: GPULAB_TOKEN]\n      --n <N>\n          [default: 3]\n",
    );
    assert_eq!(help.defaults["GPULAB_ADDR"], "127.0.0.1:8000");
    assert!(help.names.contains("GPULAB_TOKEN") && !help.defaults.contains_key("GPULAB_TOKEN"));
    assert!(help.has_flag("--addr") && help.has_flag("--token") && !help.has_flag("--ad"));
    let short = parse_serve_help(
        "  -g, --gpu <N>\n          The GPU [env: GPULAB_GPU=] [default: 0]\n      --name <NAME>\n          Its name [env: GPULAB_WORKER_NAME=]\n      --addr <A>\n          x [env: GPULAB_ADDR=] [default: [::]:8000]\n",
    );
    assert!(short.has_flag("--gpu"));
    assert_eq!(short.defaults["GPULAB_GPU"], "0");
    assert_eq!(short.defaults["GPULAB_ADDR"], "[::]:8000");
    assert!(
        short.names.contains("GPULAB_WORKER_NAME")
            && !short.defaults.contains_key("GPULAB_WORKER_NAME")
    );
    assert_eq!(
        gpulab_names("x GPULAB_A_B, `GPULAB_C=1` NOTGPULAB_D GPULAB_* GPULAB_MAX_*"),
        BTreeSet::from(["GPULAB_A_B".to_string(), "GPULAB_C".to_string()])
    );
}
