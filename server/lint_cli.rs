//! `gpulab lint FILE…`: the script doctor in a terminal, a pre-commit hook or CI, with
//! the habits of the linters people already run. Rules are chosen by `--select` /
//! `--ignore`, or else by `[tool.gpulab]` in the nearest `pyproject.toml` (`--config`
//! names one, `--isolated` reads none); `# noqa: GL101` comments silence a line. Each
//! file is read in the encoding it declares (PEP 263). Output is `text`
//! (`file:line:col: CODE message`), `json`, `github` (Actions annotations) or `sarif`
//! (code scanning). Exit status: 0 clean, 1 findings, 2 could not check a file or the
//! configuration is wrong, so CI can tell "fix your script" from "fix the check".

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use gpulab::lint::report::{self, Checked, Unchecked};
use gpulab::lint::{self, Selection, config, sarif, source};

/// Arguments of `gpulab lint`.
#[derive(Args)]
pub(crate) struct LintArgs {
    /// Python training scripts to check (they are read, never run).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// `text`: one `file:line:col: CODE message` line per finding; `json`: each file's
    /// findings with their why, fix and lesson links; `github`: GitHub Actions
    /// annotations; `sarif`: a SARIF 2.1.0 log for code scanning.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Rules to run: codes or prefixes, comma-separated (`GL1,GL203`); replaces the
    /// project's `select`.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    select: Vec<String>,
    /// Rules not to run: codes or prefixes, comma-separated; replaces the project's
    /// `ignore`.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    ignore: Vec<String>,
    /// The `pyproject.toml` to read `[tool.gpulab]` from, instead of the nearest one.
    #[arg(long, value_name = "PYPROJECT", conflicts_with = "isolated")]
    config: Option<PathBuf>,
    /// Read no `pyproject.toml`.
    #[arg(long)]
    isolated: bool,
}

/// Output formats.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
    Github,
    Sarif,
}

/// One file's outcome in the JSON document.
#[derive(serde::Serialize)]
struct FileReport {
    file: String,
    findings: Vec<report::Explained>,
    error: Option<String>,
}

impl LintArgs {
    /// Checks every file, prints the report and says how it went.
    pub(crate) fn run(self) -> ExitCode {
        let selection = match self.selection() {
            Ok(selection) => selection,
            Err(message) => {
                eprintln!("gpulab lint: {message}");
                return ExitCode::from(2);
            }
        };
        let checked: Vec<Checked> = self
            .files
            .iter()
            .map(|path| Checked {
                file: path.display().to_string(),
                outcome: check_file(path, &selection),
            })
            .collect();
        if let Err(e) = self.print(&checked) {
            eprintln!("gpulab lint: cannot write the report: {e}");
            return ExitCode::from(2);
        }
        if checked.iter().any(|c| c.outcome.is_err()) {
            ExitCode::from(2)
        } else if checked
            .iter()
            .any(|c| c.outcome.as_ref().is_ok_and(|f| !f.is_empty()))
        {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }

    /// The rules to run: the command line's selectors over the project's.
    fn selection(&self) -> Result<Selection, String> {
        let project = if self.isolated {
            None
        } else if let Some(path) = &self.config {
            Some(
                config::read(path)?
                    .ok_or_else(|| format!("{}: has no [tool.gpulab] table", path.display()))?,
            )
        } else {
            let here = std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?;
            config::find(&here)?
        };
        let (mut select, mut ignore) = project.map(|p| (p.select, p.ignore)).unwrap_or_default();
        if !self.select.is_empty() {
            select.clone_from(&self.select);
        }
        if !self.ignore.is_empty() {
            ignore.clone_from(&self.ignore);
        }
        Selection::new(select, ignore)
    }

    /// Prints the report; a reader that stops reading early (`| head`) is not an error.
    fn print(&self, checked: &[Checked]) -> Result<(), String> {
        let mut out = String::new();
        self.render(checked, &mut out).map_err(|e| e.to_string())?;
        match std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
            _ => Ok(()),
        }
    }

    fn render(&self, checked: &[Checked], out: &mut String) -> Result<(), serde_json::Error> {
        use std::fmt::Write as _;
        match self.format {
            Format::Text => {
                for c in checked {
                    match &c.outcome {
                        Ok(findings) => out.push_str(&report::lines(&c.file, findings)),
                        Err(Unchecked {
                            message,
                            place: Some((line, column)),
                        }) => {
                            let _ = writeln!(out, "{}:{line}:{column}: E999 {message}", c.file);
                        }
                        Err(unchecked) => {
                            eprintln!("{}: could not check it: {}", c.file, unchecked.message);
                        }
                    }
                }
            }
            Format::Github => {
                for c in checked {
                    match &c.outcome {
                        Ok(findings) => out.push_str(&report::github(&c.file, findings)),
                        Err(u) => out.push_str(&report::github_error(&c.file, &u.message, u.place)),
                    }
                }
            }
            Format::Json => {
                let reports: Vec<FileReport> = checked
                    .iter()
                    .map(|c| FileReport {
                        file: c.file.clone(),
                        findings: c
                            .outcome
                            .as_ref()
                            .map(|f| f.iter().map(report::Explained::new).collect())
                            .unwrap_or_default(),
                        error: c.outcome.as_ref().err().map(|u| u.message.clone()),
                    })
                    .collect();
                out.push_str(&serde_json::to_string_pretty(&reports)?);
                out.push('\n');
            }
            Format::Sarif => {
                out.push_str(&serde_json::to_string_pretty(&sarif::log(checked))?);
                out.push('\n');
            }
        }
        Ok(())
    }
}

/// One file's findings, or why it could not be checked.
fn check_file(path: &PathBuf, selection: &Selection) -> Result<Vec<lint::Finding>, Unchecked> {
    let unchecked = |message: String| Unchecked {
        message,
        place: None,
    };
    let bytes = std::fs::read(path).map_err(|e| unchecked(format!("cannot read it: {e}")))?;
    if bytes.len() > lint::MAX_SOURCE_BYTES {
        return Err(lint::LintError::TooLarge(bytes.len()).into());
    }
    let text = source::decode(&bytes).map_err(unchecked)?;
    lint::check_with(&text, selection).map_err(Unchecked::from)
}
