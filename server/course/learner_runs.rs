//! A learner's own GPU run, brought home: the `gpulab bench all --json` document they
//! made on a GPU elsewhere (Colab, a lab machine, a friend's PC) and upload to their own
//! server, which shows it beside their CPU runs as *their* measurements — kept apart from
//! the course's recordings (`reference-runs/`) and never as this server's GPU.
//!
//! [`check_upload`] takes the uploaded bytes like any other input: a size cap, then the
//! shape [`reference_runs::import`] already checks for the instructor's
//! `gpulab reference import` (a bench document from the CUDA backend, with its version,
//! date, device and driver), then what a document from someone else's machine must also
//! hold to be shown as a GPU's: every experiment one this course knows, every result
//! measured by the CUDA backend on the device the document names, a date that is not in
//! the future, and names short enough to show. Each refusal says what is wrong.

use serde_json::Value;

use super::reference_runs::{self, ImportError, ReferenceFile};

/// Why an upload is refused, in words the learner can act on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UploadError {
    /// Larger than the cap.
    #[error(
        "the file is {size} bytes; a `gpulab bench all --json` run is at most {max} bytes (is this the right file?)"
    )]
    TooLarge {
        /// Its size.
        size: usize,
        /// The cap.
        max: usize,
    },
    /// Not UTF-8 text.
    #[error("the file is not text: upload the JSON that `gpulab bench all --json` printed")]
    NotText,
    /// Not a bench document.
    #[error("{0}")]
    Shape(#[from] ImportError),
    /// A bench document from the CPU backend.
    #[error(
        "this run was made on the CPU backend, not a GPU: your own CPU runs are already in the course; bring home a run from a machine where `gpulab doctor` says the GPU (CUDA) serves"
    )]
    NotGpu,
    /// A bench document whose contents do not hold together.
    #[error("{0}")]
    Provenance(String),
}

/// The longest device name or driver version shown (NVIDIA's longest names are about 40).
const MAX_NAME_CHARS: usize = 100;
/// 2020-01-01T00:00:00Z: no GPU Lab run is older.
const EARLIEST_UNIX: u64 = 1_577_836_800;
/// How far a run's date may be ahead of this server's clock (clocks differ).
const CLOCK_SLACK_SECS: u64 = 24 * 60 * 60;

/// The learner's run in `body`, checked against the `known` experiments and this
/// server's clock (`now_unix`), as a recorded reference file titled as theirs.
pub fn check_upload(
    body: &[u8],
    max_bytes: usize,
    known: &[&str],
    now_unix: u64,
) -> Result<ReferenceFile, UploadError> {
    if body.len() > max_bytes {
        return Err(UploadError::TooLarge {
            size: body.len(),
            max: max_bytes,
        });
    }
    let text = std::str::from_utf8(body).map_err(|_| UploadError::NotText)?;
    let (_, mut file) = reference_runs::import(text, false).map_err(|e| match e {
        ImportError::NotGpu => UploadError::NotGpu,
        other => UploadError::Shape(other),
    })?;
    let Some(run) = file.recorded.as_ref() else {
        return Err(UploadError::Provenance(
            "the run has no recorded part".into(),
        ));
    };
    let problem = |message: String| Err(UploadError::Provenance(message));
    for (what, value) in [
        ("device name", &run.device),
        ("driver version", &run.driver_version),
    ] {
        if value.trim().is_empty() || value.chars().count() > MAX_NAME_CHARS {
            return problem(format!(
                "the {what} must be 1 to {MAX_NAME_CHARS} characters"
            ));
        }
        if value.chars().any(char::is_control) {
            return problem(format!("the {what} contains control characters"));
        }
    }
    if run.recorded_at_unix < EARLIEST_UNIX || run.recorded_at_unix > now_unix + CLOCK_SLACK_SECS {
        return problem(format!(
            "`generated_at_unix` {} is not a date a run can have (before 2020, or in the future by this server's clock)",
            run.recorded_at_unix
        ));
    }
    if run.experiments.len() > known.len() {
        return problem(format!(
            "{} experiments, but this course has {}: a run lists each at most once",
            run.experiments.len(),
            known.len()
        ));
    }
    let mut seen = Vec::new();
    for (i, entry) in run.experiments.iter().enumerate() {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !known.contains(&name) {
            return problem(format!(
                "experiment {} is `{name}`, which this course does not have (a run from another GPU Lab version?)",
                i + 1
            ));
        }
        if seen.contains(&name) {
            return problem(format!("experiment `{name}` is listed twice"));
        }
        seen.push(name);
        check_entry(name, entry, &run.device)?;
    }
    file.title = format!("Your run on {}", run.device);
    file.note = format!(
        "Measured by you with GPU Lab {} (`gpulab bench all --json`) on {}, driver {}, and uploaded to this server: not this server's GPU.",
        run.gpulab_version, run.device, run.driver_version
    );
    Ok(file)
}

/// One experiment's entry: a result measured by CUDA on `device`, or an error message.
fn check_entry(name: &str, entry: &Value, device: &str) -> Result<(), UploadError> {
    let problem = |message: String| Err(UploadError::Provenance(message));
    match (entry.get("result"), entry.get("error")) {
        (Some(Value::Object(result)), None) => {
            let provenance = result.get("provenance");
            let backend = provenance
                .and_then(|p| p.get("backend"))
                .and_then(Value::as_str);
            if backend != Some("cuda") {
                return problem(format!(
                    "`{name}` was not measured on the GPU (its provenance says backend {}): a GPU run's results all come from CUDA",
                    backend.map_or("nothing".to_string(), |b| format!("`{b}`"))
                ));
            }
            let measured_on = provenance
                .and_then(|p| p.get("device"))
                .and_then(Value::as_str);
            if measured_on.is_some_and(|d| d != device) {
                return problem(format!(
                    "`{name}` was measured on `{}`, not on the run's device `{device}`",
                    measured_on.unwrap_or_default()
                ));
            }
            Ok(())
        }
        (None, Some(Value::String(_))) => Ok(()),
        _ => problem(format!(
            "`{name}` needs either a `result` object or an `error` message"
        )),
    }
}

#[cfg(test)]
#[path = "learner_runs_tests.rs"]
mod tests;
