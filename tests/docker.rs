//! The Docker deployment (`docker/Dockerfile`, `docker/compose.yaml`,
//! `docker/.env.example`, `.dockerignore`, `docker/README.md`) agrees with the binary it
//! ships. There is no Docker engine on the development machines, so nothing here builds
//! an image: the files are read as text and checked against the real `gpulab` (its
//! `serve --help` and `doctor` output), the real router, and the sources the build
//! embeds. Each check names the file to fix when it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use reqwest::StatusCode;

use crate::support::{repo_path, spawn};

// ---------------------------------------------------------------------------------------
// The binary's real configuration.

/// What `gpulab serve --help` says about the environment: every variable and its default.
struct ServeEnv {
    names: BTreeSet<String>,
    defaults: BTreeMap<String, String>,
}

impl ServeEnv {
    fn load() -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gpulab"));
        command.args(["serve", "--help"]);
        // clap prints a variable's current value in the help: clear ours so the help
        // shows the binary's defaults, not this shell's settings.
        for (name, _) in std::env::vars() {
            if name.starts_with("GPULAB_") {
                command.env_remove(name);
            }
        }
        let output = command.output().expect("gpulab runs");
        assert!(output.status.success(), "gpulab serve --help failed");
        let help = String::from_utf8(output.stdout).unwrap();
        let parsed = parse_serve_help(&help);
        assert!(
            parsed.names.contains("GPULAB_ADDR") && parsed.names.contains("GPULAB_DATABASE"),
            "could not read the env names from `gpulab serve --help`:\n{help}"
        );
        parsed
    }

    /// The value a variable has in the container: set (uncommented) in .env.example,
    /// else the binary's default.
    fn effective(&self, name: &str, example: &EnvExample) -> Option<u64> {
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

/// Reads `[env: NAME=…]` / `[env: NAME]` and the `[default: …]` that follows it.
fn parse_serve_help(help: &str) -> ServeEnv {
    let mut names = BTreeSet::new();
    let mut defaults = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in help.lines().map(str::trim) {
        if line.starts_with('-') {
            current = None;
        } else if let Some(rest) = line.strip_prefix("[env: ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            names.insert(name.clone());
            current = Some(name);
        } else if let Some(rest) = line.strip_prefix("[default: ")
            && let Some(name) = current.take()
        {
            defaults.insert(name, rest.trim_end_matches(']').to_string());
        }
    }
    ServeEnv { names, defaults }
}

/// Environment variables the server reads directly (`std::env::var("GPULAB_…")`) rather
/// than through a `serve` flag, e.g. GPULAB_CUDA_INCLUDE for NVRTC's headers.
fn variables_read_by_the_server() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in files_under(&repo_path("server")) {
        if file.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(file).unwrap();
            for (at, _) in text.match_indices("env::var(\"GPULAB_") {
                let rest = &text[at + "env::var(\"".len()..];
                names.insert(rest[..rest.find('"').unwrap()].to_string());
            }
        }
    }
    names
}

/// Every `GPULAB_…` name in `text`; prefixes written as a family (`GPULAB_*`,
/// `GPULAB_MAX_*`) are left out.
fn gpulab_names(text: &str) -> BTreeSet<String> {
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

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_path(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
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

// ---------------------------------------------------------------------------------------
// docker/Dockerfile, read as a list of instructions.

/// One instruction, continuation lines joined and comments dropped.
#[derive(Debug, Clone)]
struct Instruction {
    keyword: String,
    args: String,
}

/// The Dockerfile's stages, each a list of instructions starting with its FROM.
struct Dockerfile {
    stages: Vec<Vec<Instruction>>,
}

impl Dockerfile {
    fn load() -> Self {
        Self::parse(&read("docker/Dockerfile"))
    }

    fn parse(text: &str) -> Self {
        let mut instructions = Vec::new();
        let mut pending = String::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with('#') || (trimmed.is_empty() && pending.is_empty()) {
                continue;
            }
            if let Some(head) = trimmed.strip_suffix('\\') {
                pending.push_str(head);
                pending.push(' ');
                continue;
            }
            pending.push_str(trimmed);
            let (keyword, args) = pending
                .split_once(char::is_whitespace)
                .unwrap_or((&pending, ""));
            instructions.push(Instruction {
                keyword: keyword.to_ascii_uppercase(),
                args: args.split_whitespace().collect::<Vec<_>>().join(" "),
            });
            pending.clear();
        }
        let mut stages: Vec<Vec<Instruction>> = Vec::new();
        for instruction in instructions {
            if instruction.keyword == "FROM" {
                stages.push(Vec::new());
            }
            stages
                .last_mut()
                .expect("the Dockerfile starts with FROM")
                .push(instruction);
        }
        Self { stages }
    }

    /// The image the container runs: the last stage.
    fn runtime(&self) -> &[Instruction] {
        self.stages.last().expect("a FROM")
    }

    /// The stage named `AS builder`.
    fn builder(&self) -> &[Instruction] {
        self.stages
            .iter()
            .find(|s| s[0].args.to_ascii_lowercase().ends_with(" as builder"))
            .expect("docker/Dockerfile has a stage `AS builder`")
    }

    fn all(stage: &[Instruction], keyword: &str) -> Vec<String> {
        stage
            .iter()
            .filter(|i| i.keyword == keyword)
            .map(|i| i.args.clone())
            .collect()
    }

    fn one(stage: &[Instruction], keyword: &str) -> String {
        let all = Self::all(stage, keyword);
        assert_eq!(
            all.len(),
            1,
            "docker/Dockerfile: expected one {keyword} in the runtime stage, found {all:?}"
        );
        all[0].clone()
    }

    /// ENV in the runtime stage, as name → value (both `K=V …` and `K V` forms).
    fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for args in Self::all(self.runtime(), "ENV") {
            if !args.split_whitespace().next().unwrap_or("").contains('=') {
                let (k, v) = args.split_once(' ').expect("ENV KEY VALUE");
                env.insert(k.to_string(), unquote(v));
                continue;
            }
            for pair in args.split_whitespace() {
                let (k, v) = pair
                    .split_once('=')
                    .unwrap_or_else(|| panic!("docker/Dockerfile: ENV item {pair:?} has no ="));
                env.insert(k.to_string(), unquote(v));
            }
        }
        env
    }

    /// `apt-get install` arguments in the runtime stage, flags left out.
    fn apt_packages(&self) -> Vec<String> {
        let mut packages = Vec::new();
        for run in Self::all(self.runtime(), "RUN") {
            for command in run.split("&&") {
                let words: Vec<&str> = command.split_whitespace().collect();
                if let Some(at) = words.windows(2).position(|w| w == ["apt-get", "install"]) {
                    packages.extend(
                        words[at + 2..]
                            .iter()
                            .filter(|w| !w.starts_with('-'))
                            .map(|w| w.to_string()),
                    );
                }
            }
        }
        packages
    }
}

fn unquote(value: &str) -> String {
    value.trim().trim_matches('"').to_string()
}

/// The elements of a JSON-array (exec form) instruction, or the shell form as one string.
fn exec_form(args: &str) -> Vec<String> {
    if args.starts_with('[') {
        serde_json::from_str(args).unwrap_or_else(|e| panic!("bad exec form {args}: {e}"))
    } else {
        vec![args.to_string()]
    }
}

/// `http://127.0.0.1:PORT/PATH` (or localhost) inside a health-check command.
fn health_url(command: &str) -> (u16, String) {
    let start = command
        .find("http://127.0.0.1:")
        .or_else(|| command.find("http://localhost:"))
        .unwrap_or_else(|| panic!("no http://127.0.0.1:PORT/ URL in the health check {command:?}"));
    let url = &command[start..];
    let url = &url[..url
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .unwrap_or(url.len())];
    let after_host = &url[url.rfind(':').unwrap() + 1..];
    let slash = after_host.find('/').unwrap_or(after_host.len());
    let port = after_host[..slash]
        .parse()
        .unwrap_or_else(|_| panic!("bad port in {url}"));
    (port, after_host[slash..].to_string())
}

// ---------------------------------------------------------------------------------------
// docker/compose.yaml, through a small YAML reader for the block style it uses.

/// A YAML value: mapping (in file order), sequence or scalar.
#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    Map(Vec<(String, Yaml)>),
    Seq(Vec<Yaml>),
    Str(String),
}

impl Yaml {
    fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at a dotted path, or a failure naming the path.
    fn at(&self, path: &str) -> &Yaml {
        path.split('.').fold(self, |value, key| {
            value
                .get(key)
                .unwrap_or_else(|| panic!("docker/compose.yaml has no `{path}` (at `{key}`)"))
        })
    }

    fn str(&self) -> &str {
        match self {
            Yaml::Str(s) => s,
            other => panic!("expected a scalar, found {other:?}"),
        }
    }

    fn seq(&self) -> &[Yaml] {
        match self {
            Yaml::Seq(items) => items,
            other => panic!("expected a list, found {other:?}"),
        }
    }

    fn keys(&self) -> Vec<&str> {
        match self {
            Yaml::Map(entries) => entries.iter().map(|(k, _)| k.as_str()).collect(),
            other => panic!("expected a mapping, found {other:?}"),
        }
    }
}

/// Parses the subset of YAML that compose.yaml uses: block mappings and sequences, flow
/// sequences of scalars, plain and quoted scalars, comments. Anything else (anchors,
/// block scalars, flow mappings) panics rather than being misread.
fn parse_yaml(text: &str) -> Yaml {
    let mut lines: Vec<(usize, String)> = Vec::new();
    for raw in text.lines() {
        let content = strip_comment(raw);
        if content.trim().is_empty() || content.trim() == "---" {
            continue;
        }
        assert!(!raw.contains('\t'), "tab in YAML: {raw:?}");
        let indent = content.len() - content.trim_start().len();
        lines.push((indent, content.trim().to_string()));
    }
    let mut at = 0;
    let value = parse_block(&mut lines, &mut at, 0);
    assert_eq!(
        at,
        lines.len(),
        "YAML not fully read at {:?}",
        lines.get(at)
    );
    value
}

fn strip_comment(line: &str) -> String {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single && previous != '\\' => double = !double,
            '#' if !single && !double && previous.is_whitespace() => {
                return line[..i].trim_end().to_string();
            }
            _ => {}
        }
        previous = c;
    }
    line.trim_end().to_string()
}

fn parse_block(lines: &mut [(usize, String)], at: &mut usize, indent: usize) -> Yaml {
    if lines[*at].1.starts_with("- ") || lines[*at].1 == "-" {
        let mut items = Vec::new();
        while *at < lines.len() && lines[*at].0 == indent && lines[*at].1.starts_with('-') {
            let rest = lines[*at].1[1..].trim_start().to_string();
            if rest.is_empty() {
                *at += 1;
                let child = lines[*at].0;
                items.push(parse_block(lines, at, child));
            } else if split_key(&rest).is_some() {
                // "- key: value": a mapping whose first entry sits on the dash's line.
                let column = indent + lines[*at].1.len() - rest.len();
                lines[*at] = (column, rest);
                items.push(parse_block(lines, at, column));
            } else {
                items.push(parse_inline(&rest));
                *at += 1;
            }
        }
        return Yaml::Seq(items);
    }
    let mut entries = Vec::new();
    while *at < lines.len() && lines[*at].0 == indent {
        let line = lines[*at].1.clone();
        let (key, rest) =
            split_key(&line).unwrap_or_else(|| panic!("expected `key: value`, found {line:?}"));
        *at += 1;
        let value = if !rest.is_empty() {
            parse_inline(&rest)
        } else if *at < lines.len()
            && (lines[*at].0 > indent || (lines[*at].0 == indent && lines[*at].1.starts_with('-')))
        {
            let child = lines[*at].0;
            parse_block(lines, at, child)
        } else {
            Yaml::Str(String::new())
        };
        assert!(
            entries.iter().all(|(k, _)| *k != key),
            "duplicate key {key}"
        );
        entries.push((key, value));
    }
    assert!(
        *at == lines.len() || lines[*at].0 < indent,
        "bad indentation at {:?}",
        lines[*at]
    );
    Yaml::Map(entries)
}

/// `key: rest` or `key:` (quoted keys allowed), if the line is a mapping entry.
fn split_key(line: &str) -> Option<(String, String)> {
    let (key, rest) = if let Some(quoted) = line.strip_prefix('"') {
        let end = quoted.find('"')?;
        (quoted[..end].to_string(), quoted[end + 1..].to_string())
    } else {
        let end = line
            .find(": ")
            .or_else(|| line.ends_with(':').then_some(line.len() - 1))?;
        if line[..end].contains(['[', '{', '"', '\'']) {
            return None;
        }
        (line[..end].to_string(), line[end..].to_string())
    };
    let rest = rest.strip_prefix(':')?;
    Some((key, rest.trim().to_string()))
}

fn parse_inline(text: &str) -> Yaml {
    assert!(
        !text.starts_with(['{', '&', '*', '|', '>', '!']),
        "unsupported YAML in compose.yaml: {text:?}"
    );
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .unwrap_or_else(|| panic!("unclosed flow sequence {text:?}"));
        let mut items = Vec::new();
        let (mut current, mut single, mut double) = (String::new(), false, false);
        for c in inner.chars() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single => double = !double,
                ',' if !single && !double => {
                    items.push(parse_scalar(current.trim()));
                    current.clear();
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        if !current.trim().is_empty() {
            items.push(parse_scalar(current.trim()));
        }
        return Yaml::Seq(items);
    }
    parse_scalar(text)
}

fn parse_scalar(text: &str) -> Yaml {
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return Yaml::Str(inner.replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    if let Some(inner) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return Yaml::Str(inner.replace("''", "'"));
    }
    Yaml::Str(text.to_string())
}

/// A compose duration ("90s", "1m30s", "2m") in seconds.
fn duration_secs(text: &str) -> u64 {
    let mut total = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number
            .parse()
            .unwrap_or_else(|_| panic!("bad duration {text}"));
        total += match c {
            'h' => n * 3600,
            'm' => n * 60,
            's' => n,
            _ => panic!("unsupported duration unit in {text}"),
        };
        number.clear();
    }
    assert!(number.is_empty(), "duration {text} lacks a unit");
    total
}

struct Compose {
    root: Yaml,
    service_name: String,
}

impl Compose {
    fn load() -> Self {
        let root = parse_yaml(&read("docker/compose.yaml"));
        let services = root.at("services").keys();
        assert_eq!(
            services.len(),
            1,
            "docker/compose.yaml: one service expected, found {services:?}"
        );
        let service_name = services[0].to_string();
        Self { root, service_name }
    }

    fn service(&self, path: &str) -> &Yaml {
        self.root
            .at(&format!("services.{}.{path}", self.service_name))
    }

    fn service_opt(&self, key: &str) -> Option<&Yaml> {
        self.root.at("services").get(&self.service_name)?.get(key)
    }
}

// ---------------------------------------------------------------------------------------
// docker/.env.example.

/// `NAME=value` lines: set ones, and commented-out ones (which show the default).
struct EnvExample {
    text: String,
    set: BTreeMap<String, String>,
    commented: BTreeMap<String, String>,
}

impl EnvExample {
    fn load() -> Self {
        let text = read("docker/.env.example");
        let mut set = BTreeMap::new();
        let mut commented = BTreeMap::new();
        for line in text.lines().map(str::trim) {
            let (target, body) = match line.strip_prefix('#') {
                Some(body) => (&mut commented, body.trim()),
                None => (&mut set, line),
            };
            let Some((name, value)) = body.split_once('=') else {
                continue;
            };
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                target.insert(name.to_string(), value.trim().to_string());
            }
        }
        Self {
            text,
            set,
            commented,
        }
    }
}

// ---------------------------------------------------------------------------------------
// .dockerignore, with Docker's rules: the last pattern matching a path or one of its
// parents decides; `!` lets a path back in; `*` and `?` stay within a path segment, `**`
// spans any number of segments.

struct DockerIgnore {
    patterns: Vec<(bool, Vec<String>)>,
}

impl DockerIgnore {
    fn load() -> Self {
        let mut patterns = Vec::new();
        for line in read(".dockerignore").lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, pattern) = match line.strip_prefix('!') {
                Some(p) => (true, p.trim()),
                None => (false, line),
            };
            assert!(
                !pattern.contains(['[', '\\']),
                ".dockerignore: this test does not understand {pattern:?}"
            );
            let segments = pattern
                .trim_start_matches('/')
                .trim_end_matches('/')
                .split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(str::to_string)
                .collect();
            patterns.push((negated, segments));
        }
        Self { patterns }
    }

    /// Whether `relative` (a repository path with `/`) is left out of the build context.
    fn excludes(&self, relative: &str) -> bool {
        let path: Vec<&str> = relative.split('/').collect();
        let mut excluded = false;
        for (negated, pattern) in &self.patterns {
            let hit = (1..=path.len()).any(|n| glob_segments(pattern, &path[..n]));
            if hit {
                excluded = !negated;
            }
        }
        excluded
    }
}

fn glob_segments(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| glob_segments(rest, &path[skip..]))
        }
        Some((first, rest)) => {
            !path.is_empty()
                && glob_segment(first.as_bytes(), path[0].as_bytes())
                && glob_segments(rest, &path[1..])
        }
    }
}

fn glob_segment(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| glob_segment(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && glob_segment(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && glob_segment(rest, &name[1..]),
    }
}

/// `path` relative to the repository, with `/` separators.
fn relative(path: &Path) -> String {
    path.strip_prefix(repo_path(""))
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Resolves `.` and `..` without touching the file system.
fn normalise(path: &Path) -> PathBuf {
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
fn embedded_paths() -> Vec<PathBuf> {
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
// The checks.

#[test]
fn every_gpulab_variable_in_the_docker_files_is_real() {
    let serve = ServeEnv::load();
    let direct = variables_read_by_the_server();
    assert!(
        direct.contains("GPULAB_CUDA_INCLUDE"),
        "expected the server to read GPULAB_CUDA_INCLUDE (server/gpu/kernels.rs)"
    );
    for file in [
        "docker/Dockerfile",
        "docker/compose.yaml",
        "docker/.env.example",
        "docker/README.md",
    ] {
        for name in gpulab_names(&read(file)) {
            assert!(
                serve.names.contains(&name) || direct.contains(&name),
                "{file} names {name}, which is neither a `gpulab serve` env var ({:?}) nor read by the server",
                serve.names
            );
        }
    }
    // The same for what the files *set*, spelled out, so a typo cannot hide in prose.
    let dockerfile = Dockerfile::load();
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
fn base_images_are_pinned_and_cuda_headers_match_them() {
    let dockerfile = Dockerfile::load();
    let mut cuda_version = None;
    for stage in &dockerfile.stages {
        let image = stage[0].args.split_whitespace().next().unwrap();
        let (name, tag) = image
            .split_once(':')
            .unwrap_or_else(|| panic!("FROM {image} has no tag"));
        assert!(
            tag != "latest" && tag.chars().next().is_some_and(|c| c.is_ascii_digit()),
            "FROM {image}: pin a versioned tag"
        );
        if name.ends_with("nvidia/cuda") {
            assert!(
                tag.contains("-runtime-"),
                "use a CUDA -runtime image, not {tag}"
            );
            let mut parts = tag.split(['.', '-']);
            cuda_version = Some((
                parts.next().unwrap().to_string(),
                parts.next().unwrap().to_string(),
            ));
        }
    }
    let (major, minor) = cuda_version.expect("the runtime stage is FROM nvidia/cuda");
    assert!(
        dockerfile.runtime()[0].args.contains("nvidia/cuda"),
        "the last stage runs the server on the CUDA image"
    );
    let packages = dockerfile.apt_packages();
    for package in packages
        .iter()
        .filter(|p| p.starts_with("cuda-") || p.starts_with("libcublas"))
    {
        let (name, version) = package
            .split_once('=')
            .unwrap_or_else(|| panic!("{package}: pin CUDA packages to a version"));
        assert!(
            name.ends_with(&format!("-{major}-{minor}"))
                && version.starts_with(&format!("{major}.{minor}.")),
            "{package} does not match the base image's CUDA {major}.{minor}"
        );
    }
    assert!(
        packages
            .iter()
            .any(|p| p.starts_with(&format!("cuda-cudart-dev-{major}-{minor}="))),
        "NVRTC needs cuda_fp16.h/cuda_bf16.h: install cuda-cudart-dev-{major}-{minor}"
    );
    let include = dockerfile
        .env()
        .get("GPULAB_CUDA_INCLUDE")
        .cloned()
        .expect("docker/Dockerfile sets GPULAB_CUDA_INCLUDE");
    assert!(include.split(':').any(|p| p == "/usr/local/cuda/include"));
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
                    wheels.join("cuda_runtime/lib").display()
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

// Self-tests of the small readers above, so a bug in them cannot pass a broken file.

#[test]
fn readers_understand_what_they_claim_to() {
    let yaml = parse_yaml(
        "name: x # comment\nservices:\n  a:\n    ports:\n      - \"1:2\"\n    test: [\"CMD-SHELL\", \"curl http://127.0.0.1:9/h || exit 1\"]\n    devices:\n      - driver: nvidia\n        count: 1\n        capabilities: [gpu]\nvolumes:\n  v:\n    name: v\n",
    );
    assert_eq!(yaml.at("name").str(), "x");
    assert_eq!(yaml.at("services.a.ports").seq()[0].str(), "1:2");
    assert_eq!(
        yaml.at("services.a.test").seq()[1].str(),
        "curl http://127.0.0.1:9/h || exit 1"
    );
    let device = &yaml.at("services.a.devices").seq()[0];
    assert_eq!(device.at("count").str(), "1");
    assert_eq!(device.at("capabilities").seq(), &[Yaml::Str("gpu".into())]);
    assert_eq!(yaml.at("volumes.v.name").str(), "v");
    assert_eq!(
        health_url("curl -fsS http://127.0.0.1:8000/healthz || exit 1"),
        (8000, "/healthz".into())
    );
    assert_eq!(duration_secs("1m30s"), 90);

    let dockerfile = Dockerfile::parse(
        "FROM a:1 AS builder\nRUN x \\\n  # note\n  && y\nFROM b:2\nENV A=1 \\\n    B=two\nUSER 7\n",
    );
    assert_eq!(dockerfile.stages.len(), 2);
    assert_eq!(dockerfile.stages[0][1].args, "x && y");
    assert_eq!(dockerfile.env()["B"], "two");

    let help = parse_serve_help(
        "      --addr <ADDR>\n          x\n          [env: GPULAB_ADDR=]\n          [default: 127.0.0.1:8000]\n      --token <T>\n          [env: GPULAB_TOKEN]\n      --n <N>\n          [default: 3]\n",
    );
    assert_eq!(help.defaults["GPULAB_ADDR"], "127.0.0.1:8000");
    assert!(help.names.contains("GPULAB_TOKEN") && !help.defaults.contains_key("GPULAB_TOKEN"));
    assert_eq!(
        gpulab_names("x GPULAB_A_B, `GPULAB_C=1` NOTGPULAB_D GPULAB_* GPULAB_MAX_*"),
        BTreeSet::from(["GPULAB_A_B".to_string(), "GPULAB_C".to_string()])
    );

    let ignore = DockerIgnore {
        patterns: vec![
            (false, vec!["*".into()]),
            (true, vec!["server".into()]),
            (false, vec!["**".into(), "*.db".into()]),
        ],
    };
    assert!(ignore.excludes("target/x"));
    assert!(!ignore.excludes("server/a/b.rs"));
    assert!(ignore.excludes("server/a/x.db"));
}
