//! This machine's CPU BLAS reference: a record, written by `tests/bench/sgemm.sh` (as
//! `target/bench/cpu-reference.json`), of numpy's SGEMM (OpenBLAS, usually) and ours timed
//! on this CPU. The matmul panel compares the GPU with our own CPU product; a record
//! lets it say how that product compares with an optimised library on the same CPU, so
//! a slow CPU column cannot make the GPU look better than it is unnoticed.
//!
//! A record is used only when it describes this machine: the CPU model and logical core
//! count it names must be the ones [`super::cpu_info`] reads here. A missing file is no
//! record and no message; an unreadable or malformed one, or one from another CPU, is
//! refused with a reason ([`Refused`]) that the server logs once at start-up.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::CpuInfo;

/// The record format this server reads (`"format": 1`).
pub const FORMAT: u32 = 1;

/// Larger files are not a record `sgemm.sh` wrote (one is about 1 KiB).
const MAX_BYTES: u64 = 64 * 1024;

/// One reference record, as written and as served in `/api/device` (`cpu.blas_reference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BlasReference {
    /// Always [`FORMAT`].
    pub format: u32,
    /// The CPU it was recorded on, as `gpulab device` reported it then.
    pub cpu: RecordedCpu,
    /// The BLAS library by name and version, e.g. `OpenBLAS 0.3.31`.
    pub blas: String,
    /// The whole library line: numpy's version, the BLAS, its kernel and threads.
    pub library: String,
    /// When the record was made (UTC, ISO 8601).
    pub recorded_at: String,
    /// The 1, 5 and 15 minute load averages before and after the run.
    pub load_average: LoadAverage,
    /// Interleaved rounds (ours, then numpy's, alternating which goes first).
    pub rounds: u32,
    /// One row per matrix side, smallest first.
    pub rows: Vec<ReferenceRow>,
}

/// The CPU a record names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecordedCpu {
    /// Model name, as in [`CpuInfo::model`].
    pub model: String,
    /// Logical cores, as in [`CpuInfo::logical_cores`].
    pub logical_cores: usize,
}

/// Load averages (1, 5 and 15 minutes) around a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LoadAverage {
    /// Before the first round.
    pub before: [f64; 3],
    /// After the last round.
    pub after: [f64; 3],
}

/// One matrix side: the medians over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReferenceRow {
    /// Matrix side n (n × n times n × n, FP32).
    pub size: usize,
    /// numpy's `a @ b` (the BLAS's SGEMM), median milliseconds per product.
    pub numpy_ms: f64,
    /// GPU Lab's CPU product in the same rounds, median milliseconds per product.
    pub gpulab_ms: f64,
    /// Median over rounds of numpy's time ÷ ours (1.0 = level, below 1 = ours slower).
    pub ratio: f64,
}

/// Why a record on disk is not used.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The file exists but could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(#[from] std::io::Error),
    /// It is not a record this server understands.
    #[error("it is not a format-1 CPU reference record: {0}")]
    Malformed(String),
    /// It was recorded on another machine (or another core count).
    #[error("it was recorded on {recorded}, and this machine is {here}")]
    OtherCpu {
        /// The CPU the record names.
        recorded: String,
        /// This machine's CPU.
        here: String,
    },
}

fn describe(model: &str, cores: usize) -> String {
    format!("{model} with {cores} logical cores")
}

/// Reads the record at `path` for the CPU `here`: `Ok(None)` when there is no file.
pub fn load(path: &Path, here: &CpuInfo) -> Result<Option<BlasReference>, Refused> {
    let size = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if size > MAX_BYTES {
        return Err(Refused::Malformed(format!(
            "{size} bytes, more than the {MAX_BYTES} a record can be"
        )));
    }
    parse(&std::fs::read_to_string(path)?, here).map(Some)
}

/// The record in `text`, if it is well formed and was made on the CPU `here`.
pub fn parse(text: &str, here: &CpuInfo) -> Result<BlasReference, Refused> {
    let record: BlasReference =
        serde_json::from_str(text).map_err(|e| Refused::Malformed(e.to_string()))?;
    if record.format != FORMAT {
        return Err(Refused::Malformed(format!(
            "format {}, this server reads format {FORMAT}",
            record.format
        )));
    }
    if record.rows.is_empty() {
        return Err(Refused::Malformed("no rows".into()));
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if let Some(row) = record.rows.iter().find(|r| {
        r.size == 0 || !positive(r.numpy_ms) || !positive(r.gpulab_ms) || !positive(r.ratio)
    }) {
        return Err(Refused::Malformed(format!(
            "the row for n = {} has a time or ratio that is not a positive number",
            row.size
        )));
    }
    if record.cpu.model != here.model || record.cpu.logical_cores != here.logical_cores {
        return Err(Refused::OtherCpu {
            recorded: describe(&record.cpu.model, record.cpu.logical_cores),
            here: describe(&here.model, here.logical_cores),
        });
    }
    Ok(record)
}

#[cfg(test)]
#[path = "blas_reference_tests.rs"]
mod tests;
