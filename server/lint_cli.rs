//! `gpulab lint FILE…`: the script doctor in a terminal or a learner's CI. Prints one
//! `file:line:col: CODE message` line per finding (or a JSON document with
//! `--format json`) and exits 1 when anything was found or a file is not valid Python,
//! 2 when a file cannot be read, 0 when every file is clean.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use gpulab::lint::{self, LintError, report};

/// Arguments of `gpulab lint`.
#[derive(Args)]
pub struct LintArgs {
    /// Python training scripts to check (they are read, never run).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// `text`: one `file:line:col: CODE message` line per finding; `json`: each file's
    /// findings with their why, fix and lesson links.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Output formats.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// One file's outcome in the JSON document.
#[derive(serde::Serialize)]
struct FileReport {
    file: String,
    findings: Vec<report::Explained>,
    error: Option<String>,
}

impl LintArgs {
    /// Checks every file and prints the report.
    pub fn run(self) -> ExitCode {
        let mut found = false;
        let mut unreadable = false;
        let mut reports = Vec::new();
        for path in &self.files {
            let name = path.display().to_string();
            let outcome = match std::fs::read(path) {
                Err(e) => {
                    eprintln!("{name}: cannot read it: {e}");
                    unreadable = true;
                    continue;
                }
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => lint::check(&text),
                    Err(_) => {
                        eprintln!("{name}: not UTF-8 text");
                        unreadable = true;
                        continue;
                    }
                },
            };
            found |= !matches!(&outcome, Ok(findings) if findings.is_empty());
            match self.format {
                Format::Text => match &outcome {
                    Ok(findings) => print!("{}", report::lines(&name, findings)),
                    Err(error) => print!("{}", report::error_line(&name, error)),
                },
                Format::Json => reports.push(FileReport {
                    file: name,
                    findings: outcome
                        .as_ref()
                        .map(|f| f.iter().map(report::Explained::new).collect())
                        .unwrap_or_default(),
                    error: outcome.as_ref().err().map(LintError::to_string),
                }),
            }
        }
        if let Format::Json = self.format {
            match serde_json::to_string_pretty(&reports) {
                Ok(text) => println!("{text}"),
                Err(e) => {
                    eprintln!("gpulab: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        if unreadable {
            ExitCode::from(2)
        } else if found {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}
