//! `docker/Dockerfile`, read as a list of instructions per stage (continuation lines
//! joined, comments dropped), with the exec-form and health-check readers the checks use.

use std::collections::BTreeMap;

use super::binary::read;

/// One instruction, continuation lines joined and comments dropped.
#[derive(Debug, Clone)]
pub(super) struct Instruction {
    pub keyword: String,
    pub args: String,
}

/// The Dockerfile's stages, each a list of instructions starting with its FROM, and the
/// `ARG`s before the first FROM (which FROM lines may use).
pub(super) struct Dockerfile {
    pub stages: Vec<Vec<Instruction>>,
    pub global_args: Vec<Instruction>,
}

impl Dockerfile {
    pub(super) fn load() -> Self {
        Self::parse(&read("docker/Dockerfile"))
    }

    pub(super) fn parse(text: &str) -> Self {
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
        let mut global_args = Vec::new();
        for instruction in instructions {
            if instruction.keyword == "FROM" {
                stages.push(Vec::new());
            }
            match stages.last_mut() {
                Some(stage) => stage.push(instruction),
                None => {
                    assert_eq!(
                        instruction.keyword, "ARG",
                        "docker/Dockerfile: only ARG may come before the first FROM"
                    );
                    global_args.push(instruction);
                }
            }
        }
        Self {
            stages,
            global_args,
        }
    }

    /// The stage named `AS name`.
    pub(super) fn stage(&self, name: &str) -> &[Instruction] {
        let suffix = format!(" as {name}");
        self.stages
            .iter()
            .find(|s| s[0].args.to_ascii_lowercase().ends_with(&suffix))
            .unwrap_or_else(|| panic!("docker/Dockerfile has no stage `AS {name}`"))
    }

    /// The image the container runs: the last stage.
    pub(super) fn runtime(&self) -> &[Instruction] {
        self.stages.last().expect("a FROM")
    }

    /// The stage named `AS builder`.
    pub(super) fn builder(&self) -> &[Instruction] {
        self.stage("builder")
    }

    pub(super) fn all(stage: &[Instruction], keyword: &str) -> Vec<String> {
        stage
            .iter()
            .filter(|i| i.keyword == keyword)
            .map(|i| i.args.clone())
            .collect()
    }

    pub(super) fn one(stage: &[Instruction], keyword: &str) -> String {
        let all = Self::all(stage, keyword);
        assert_eq!(
            all.len(),
            1,
            "docker/Dockerfile: expected one {keyword} in the runtime stage, found {all:?}"
        );
        all[0].clone()
    }

    /// ENV in the runtime stage, as name → value (both `K=V …` and `K V` forms).
    pub(super) fn env(&self) -> BTreeMap<String, String> {
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
    pub(super) fn apt_packages(&self) -> Vec<String> {
        Self::apt_packages_of(self.runtime())
    }

    /// `apt-get install` arguments in `stage`, flags left out.
    pub(super) fn apt_packages_of(stage: &[Instruction]) -> Vec<String> {
        let mut packages = Vec::new();
        for run in Self::all(stage, "RUN") {
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

pub(super) fn unquote(value: &str) -> String {
    value.trim().trim_matches('"').to_string()
}

/// The elements of a JSON-array (exec form) instruction, or the shell form as one string.
pub(super) fn exec_form(args: &str) -> Vec<String> {
    if args.starts_with('[') {
        serde_json::from_str(args).unwrap_or_else(|e| panic!("bad exec form {args}: {e}"))
    } else {
        vec![args.to_string()]
    }
}

/// `http://127.0.0.1:PORT/PATH` (or localhost) inside a health-check command.
pub(super) fn health_url(command: &str) -> (u16, String) {
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

#[test]
fn the_dockerfile_reader_reads_what_it_claims_to() {
    let dockerfile = Dockerfile::parse(
        "ARG WHICH=builder\nFROM a:1 AS builder\nRUN x \\\n  # note\n  && y\nFROM b:2\nENV A=1 \\\n    B=two\nUSER 7\n",
    );
    assert_eq!(dockerfile.global_args[0].args, "WHICH=builder");
    assert_eq!(dockerfile.stages.len(), 2);
    assert_eq!(dockerfile.stages[0][1].args, "x && y");
    assert_eq!(dockerfile.env()["B"], "two");
    assert_eq!(
        health_url("curl -fsS http://127.0.0.1:8000/healthz || exit 1"),
        (8000, "/healthz".into())
    );
}
