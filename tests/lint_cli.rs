//! `gpulab lint` from the outside, as a developer, a pre-commit hook or CI runs it: the
//! exit status separates findings (1) from files it could not check (2); `--select`,
//! `--ignore`, `[tool.gpulab]` and `# noqa` choose what is reported; a file in a
//! declared encoding is read as Python reads it; and each output format is read back by
//! a reader someone else wrote: SARIF by the `jsonschema` crate against OASIS's own
//! schema, JSON against the schema the server's OpenAPI document publishes, PEP 263
//! decoding against CPython, the hook manifest as pre-commit's fields (tests/run.sh also
//! runs `pre-commit validate-manifest`, and tests/e2e/github-annotations.mjs compares
//! the GitHub annotations with @actions/core's).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::repo_path;

const SCRIPT: &str = "tests/fixtures/lint-corpus/nanogpt/train.py";

/// `gpulab lint ARGS` run in `dir`: exit status and standard output.
fn lint_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .arg("lint")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

/// A temporary folder with a `pyproject.toml` that has no `[tool.gpulab]`, so no
/// configuration above it is read.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), "[project]\nname = 'x'\n").unwrap();
    dir
}

const LOOP: &str = "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\nfor x, y in loader:\n    loss = crit(model(x.to(device)), y.to(device))\n    loss.backward()\n    opt.step()\n    opt.zero_grad()\n    print(loss.item())\n    scaler = torch.cuda.amp.GradScaler()\n";

#[test]
fn exit_status_is_0_clean_1_findings_2_could_not_check() {
    let dir = project();
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        name.to_string()
    };
    let clean = write("clean.py", b"import torch\nx = torch.zeros(3)\n");
    let found = write("found.py", LOOP.as_bytes());
    let broken = write("broken.py", b"def f(:\n    pass\n");
    let latin = write("latin.py", b"x = '\xe9'\n");
    assert_eq!(lint_in(dir.path(), &[&clean]), (Some(0), String::new()));
    let (status, text) = lint_in(dir.path(), &[&found]);
    assert_eq!(status, Some(1), "{text}");
    assert!(text.starts_with("found.py:8:11: GL101 "), "{text}");
    let (status, text) = lint_in(dir.path(), &[&broken, &found]);
    assert_eq!(
        status,
        Some(2),
        "a file not checked outweighs findings: {text}"
    );
    assert!(text.contains("broken.py:1:7: E999 syntax error"), "{text}");
    assert_eq!(
        lint_in(dir.path(), &[&latin]).0,
        Some(2),
        "undeclared Latin-1"
    );
    assert_eq!(lint_in(dir.path(), &["no-such-file.py"]).0, Some(2));
    let big = write("big.py", "x = 1\n".repeat(40_000).as_bytes());
    assert_eq!(lint_in(dir.path(), &[&big]).0, Some(2), "over 200 KB");
    assert_eq!(lint_in(dir.path(), &["--select", "XX9", &clean]).0, Some(2));
}

#[test]
fn a_declared_encoding_is_read_as_python_reads_it() {
    let dir = project();
    let mut bytes = b"# -*- coding: cp1252 -*-\n# \x80 cost, \xe9t\xe9\n".to_vec();
    bytes.extend_from_slice(LOOP.as_bytes());
    std::fs::write(dir.path().join("cp1252.py"), &bytes).unwrap();
    let (status, text) = lint_in(dir.path(), &["cp1252.py"]);
    assert_eq!(status, Some(1), "{text}");
    assert!(
        text.contains("cp1252.py:10:11: GL101"),
        "lines counted after decoding: {text}"
    );
}

/// How CPython decodes `bytes` as a source file: its text, or `None` when it refuses.
fn cpython_decodes(bytes: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("source.py");
    std::fs::write(&path, bytes).unwrap();
    let program = "import sys, tokenize\ndata = open(sys.argv[1], 'rb').read()\ntry:\n    encoding, _ = tokenize.detect_encoding(open(sys.argv[1], 'rb').readline)\n    text = data.decode(encoding)\nexcept (SyntaxError, UnicodeDecodeError, LookupError):\n    sys.exit(3)\nsys.stdout.buffer.write(text.encode('utf-8'))\n";
    let output = Command::new("python3")
        .args(["-c", program, path.to_str().unwrap()])
        .output()
        .expect("python3 is installed (tests/setup.sh)");
    match output.status.code() {
        Some(0) => Some(String::from_utf8(output.stdout).unwrap()),
        Some(3) => None,
        other => panic!(
            "python3 failed ({other:?}): {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

#[test]
fn declared_encodings_are_decoded_as_cpython_decodes_them() {
    let cases: [&[u8]; 10] = [
        b"# -*- coding: latin-1 -*-\nx = '\x80\xe9\xff'\n",
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '\x80 \x93ok\x94'\n",
        b"# coding: cp1252\nx = '\x81'\n",
        b"# coding=shift_jis\nx = '\x93\xfa\x96\x7b'\n",
        b"# -*- coding: euc-jp -*-\nx = '\xc6\xfc\xcb\xdc'\n",
        b"# coding: koi8-r\nx = '\xf0\xf2\xe9'\n",
        b"\xef\xbb\xbfx = '\xc3\xa9'\n",
        b"x = '\xe9'\n",
        b"# coding: utf-8\nx = '\xc3\xa9'\r\ny = 1\r\n",
        b"import os\n# coding: latin-1\nx = '\xe9'\n",
    ];
    for bytes in cases {
        let ours = gpulab::lint::source::decode(bytes).ok();
        assert_eq!(
            ours,
            cpython_decodes(bytes),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn select_ignore_pyproject_and_noqa_choose_what_is_reported() {
    let dir = project();
    std::fs::write(dir.path().join("train.py"), LOOP).unwrap();
    let codes = |args: &[&str]| -> Vec<String> {
        let (_, text) = lint_in(dir.path(), args);
        text.lines()
            .map(|l| l.split(' ').nth(1).unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(codes(&["train.py"]), ["GL101", "GL402"]);
    assert_eq!(codes(&["--select", "GL4", "train.py"]), ["GL402"]);
    assert_eq!(
        codes(&["--ignore", "GL101,GL402", "train.py"]),
        Vec::<String>::new()
    );
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.gpulab]\nignore = [\"GL4\"]\n",
    )
    .unwrap();
    let sub = dir.path().join("src");
    std::fs::create_dir(&sub).unwrap();
    let (_, text) = lint_in(&sub, &["../train.py"]);
    assert!(
        !text.contains("GL402") && text.contains("GL101"),
        "read from a subfolder: {text}"
    );
    assert_eq!(codes(&["--isolated", "train.py"]), ["GL101", "GL402"]);
    assert_eq!(
        codes(&["--ignore", "GL1", "train.py"]),
        ["GL402"],
        "the command line replaces the project's ignore"
    );
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.gpulab]\nselct = [\"GL1\"]\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args(["lint", "train.py"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown field `selct`"));
    std::fs::write(dir.path().join("pyproject.toml"), "[project]\n").unwrap();
    let silenced = LOOP.replace(
        "print(loss.item())",
        "print(loss.item())  # noqa: GL101 logged on purpose",
    );
    std::fs::write(dir.path().join("train.py"), silenced).unwrap();
    assert_eq!(codes(&["train.py"]), ["GL402"]);
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("tests/fixtures/sarif/sarif-schema-2.1.0.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("OASIS's schema compiles");
    let dir = project();
    std::fs::write(dir.path().join("broken file.py"), "def f(:\n").unwrap();
    let script = repo_path(SCRIPT);
    let (status, text) = lint_in(
        dir.path(),
        &[
            "--format",
            "sarif",
            script.to_str().unwrap(),
            "broken file.py",
        ],
    );
    assert_eq!(status, Some(2));
    let log: Value = serde_json::from_str(&text).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let run = &log["runs"][0];
    assert_eq!(run["results"][0]["ruleId"], "GL402");
    assert_eq!(
        run["invocations"][0]["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"]
            ["artifactLocation"]["uri"],
        "broken%20file.py"
    );
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = "severe".into();
    assert!(
        !validator.is_valid(&broken),
        "the validator does reject a wrong log"
    );
}

#[test]
fn json_output_matches_the_schema_the_api_publishes() {
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .arg("openapi")
        .output()
        .unwrap();
    let openapi: Value = serde_json::from_slice(&output.stdout).unwrap();
    let schema = &openapi["components"]["schemas"]["Explained"];
    let validator = jsonschema::draft202012::new(schema).unwrap();
    let script = repo_path(SCRIPT);
    let (_, text) = lint_in(
        &repo_path(""),
        &["--format", "json", script.to_str().unwrap()],
    );
    let report: Value = serde_json::from_str(&text).unwrap();
    let findings = report[0]["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    for finding in findings {
        assert!(validator.is_valid(finding), "{finding}");
    }
    assert!(!validator.is_valid(&serde_json::json!({"code": 101})));
}

#[test]
fn github_output_is_one_annotation_per_finding() {
    let dir = project();
    std::fs::write(dir.path().join("train.py"), LOOP).unwrap();
    let (status, text) = lint_in(dir.path(), &["--format", "github", "train.py"]);
    assert_eq!(status, Some(1));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("::warning title=GL101 sync-every-step,file=train.py,line=8,col=11::`.item()` runs on every training step"),
        "{text}"
    );
}

#[test]
fn the_pre_commit_manifest_runs_this_command_on_python_files() {
    let manifest: Vec<serde_json::Map<String, Value>> = yaml_serde::from_str(
        &std::fs::read_to_string(repo_path(".pre-commit-hooks.yaml")).unwrap(),
    )
    .unwrap();
    assert!(!manifest.is_empty());
    for hook in &manifest {
        for field in ["id", "name", "entry", "language"] {
            assert!(
                hook.get(field).and_then(Value::as_str).is_some(),
                "{field} in {hook:?}"
            );
        }
        assert!(
            ["rust", "system"].contains(&hook["language"].as_str().unwrap()),
            "{hook:?}"
        );
        assert_eq!(hook["types"], serde_json::json!(["python"]));
        // pre-commit runs `entry` with the changed files appended.
        let entry: Vec<&str> = hook["entry"].as_str().unwrap().split_whitespace().collect();
        assert_eq!(entry[..2], ["gpulab", "lint"], "{hook:?}");
        let dir = project();
        std::fs::write(dir.path().join("train.py"), LOOP).unwrap();
        let mut args: Vec<&str> = entry[2..].to_vec();
        args.push("train.py");
        assert_eq!(lint_in(dir.path(), &args).0, Some(1), "{hook:?}");
    }
}
