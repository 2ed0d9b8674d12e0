//! Allocator sequences (`tests/gpu/allocator_sequences.json`) run through the model:
//! `gpulab allocator-model FILE` prints these figures as JSON, and
//! `tests/gpu/ref_allocator.py` runs the same sequences in PyTorch on a GPU and compares
//! them figure by figure.

use serde::{Deserialize, Serialize};

use super::{AllocConf, Allocator, Chunk, Driver};

/// The file: sequences, each a list of steps.
#[derive(Debug, Deserialize)]
pub struct SequenceFile {
    /// The sequences.
    pub sequences: Vec<Sequence>,
}

/// One sequence.
#[derive(Debug, Deserialize)]
pub struct Sequence {
    /// Its name.
    pub name: String,
    /// `PYTORCH_CUDA_ALLOC_CONF`, e.g. `expandable_segments:True`.
    #[serde(default)]
    pub conf: String,
    /// The memory the allocator may reserve, in MiB (unlimited when absent).
    #[serde(default)]
    pub limit_mib: Option<u64>,
    /// `["alloc", name, bytes]`, `["free", name]` or `["empty_cache"]`.
    pub steps: Vec<Vec<serde_json::Value>>,
    /// The expected figures (checked by the tests).
    #[serde(default)]
    pub expect: Vec<Option<[u64; 2]>>,
}

/// The figures after one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// `memory_allocated()`, or `None` after an out-of-memory error.
    pub allocated: Option<u64>,
    /// `memory_reserved()`, likewise.
    pub reserved: Option<u64>,
    /// Whether the step raised `torch.OutOfMemoryError`.
    pub oom: bool,
}

/// A sequence's figures.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The sequence's name.
    pub name: String,
    /// One entry per step.
    pub figures: Vec<Figures>,
}

/// A device with no limit of its own: the model's limit is the only one.
struct Unlimited;

impl Driver for Unlimited {
    fn map(&mut self, _: Chunk, _: u64) -> bool {
        true
    }
    fn unmap(&mut self, _: Chunk) {}
}

/// Parses `PYTORCH_CUDA_ALLOC_CONF`'s two options the model has.
pub fn parse_conf(text: &str) -> Result<AllocConf, String> {
    let mut conf = AllocConf::default();
    for option in text.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match option.split_once(':') {
            Some(("expandable_segments", v)) => conf.expandable_segments = v == "True",
            Some(("max_split_size_mb", v)) => {
                let mb: u64 = v.parse().map_err(|_| format!("not a number: {option}"))?;
                if mb < 20 {
                    return Err("max_split_size_mb must be at least 20".into());
                }
                conf.max_split_size_mb = Some(mb);
            }
            _ => return Err(format!("an option the model does not have: {option}")),
        }
    }
    Ok(conf)
}

/// Runs one sequence through the model.
pub fn run(sequence: &Sequence) -> Result<Outcome, String> {
    let conf = parse_conf(&sequence.conf)?;
    let limit = sequence.limit_mib.map_or(u64::MAX, |m| m << 20);
    let mut allocator = Allocator::new(conf, limit);
    let mut figures = Vec::new();
    for step in &sequence.steps {
        let op = step.first().and_then(|v| v.as_str()).unwrap_or("");
        let name = step.get(1).and_then(|v| v.as_str()).unwrap_or("");
        let mut oom = false;
        match op {
            "alloc" => {
                let bytes = step.get(2).and_then(serde_json::Value::as_u64);
                let bytes = bytes.ok_or_else(|| format!("{}: alloc needs bytes", sequence.name))?;
                oom = allocator.malloc(name, bytes, &mut Unlimited).is_err();
            }
            "free" if allocator.free(name) => {}
            "empty_cache" => allocator.empty_cache(&mut Unlimited),
            _ => return Err(format!("{}: not a step: {step:?}", sequence.name)),
        }
        figures.push(Figures {
            allocated: (!oom).then(|| allocator.allocated()),
            reserved: (!oom).then(|| allocator.reserved()),
            oom,
        });
    }
    Ok(Outcome {
        name: sequence.name.clone(),
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sequence of the GPU comparison gives the figures its file expects, which
    /// were worked out from PyTorch's source.
    #[test]
    fn the_gpu_comparison_sequences_give_the_expected_figures() {
        // Read at test time, not embedded: the file is the GPU run's, not the binary's.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/gpu/allocator_sequences.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let file: SequenceFile = serde_json::from_str(&text).unwrap();
        assert!(file.sequences.len() >= 5);
        for sequence in &file.sequences {
            let outcome = run(sequence).unwrap();
            let got: Vec<Option<[u64; 2]>> = outcome
                .figures
                .iter()
                .map(|f| f.allocated.zip(f.reserved).map(|(a, r)| [a, r]))
                .collect();
            assert_eq!(got, sequence.expect, "{}", sequence.name);
        }
        assert!(parse_conf("max_split_size_mb:19").is_err());
        assert_eq!(
            parse_conf("max_split_size_mb:20")
                .unwrap()
                .max_split_size_mb,
            Some(20),
            "PyTorch 2.15 accepts 20 (`>= 20` in c10/core/AllocatorConfig.cpp)"
        );
        assert!(parse_conf("garbage_collection_threshold:0.6").is_err());
    }
}
