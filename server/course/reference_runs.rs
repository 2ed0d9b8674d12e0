//! Reference GPU results shown beside CPU runs ("what a GPU shows"), from
//! `content/reference-runs/*.json`. Two kinds of file, each carrying where its numbers
//! come from:
//!  - `published`: peak figures from NVIDIA's datasheets and whitepapers, each with its
//!    document and URL. They are published peaks, never measurements, and say so.
//!  - `recorded`: a `gpulab bench all --json` document from a real GPU, imported with
//!    `gpulab reference import`, stamped with device, driver, CUDA, date and GPU Lab
//!    version. `import --fixture` also takes a CPU run (tests/gpu/gpu-run.sh --cpu) as a
//!    *test fixture*: marked as such, labelled "not a GPU" wherever it is shown, and
//!    refused by `gpulab check`, so it never ships in a course.
//!
//! [`validate`] is what `gpulab check` and course loading run; [`import`] turns a bench
//! document into a recorded file or says, in words, why it cannot.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The folder (inside the content folder) holding the reference files.
pub const DIR: &str = "reference-runs";

/// One reference file.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceFile {
    /// `published` or `recorded`.
    pub kind: Kind,
    /// A short title for the overlay's label.
    pub title: String,
    /// What the numbers are and are not (e.g. "published peak, not measured").
    pub note: String,
    /// Published figures (`published` files).
    #[serde(default)]
    pub figures: Vec<Figure>,
    /// The recorded run (`recorded` files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Recorded>,
}

/// Which kind of reference a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Figures quoted from a vendor's documents.
    Published,
    /// A run of GPU Lab's own benchmarks on a GPU.
    Recorded,
}

/// What a published figure measures, and the unit it is given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Host–device link (PCIe), GB/s.
    PcieGbps,
    /// GPU–GPU link (NVLink), GB/s.
    NvlinkGbps,
    /// GPU memory (HBM/GDDR), GB/s.
    MemoryGbps,
    /// FP32 arithmetic without tensor cores, TFLOP/s.
    Fp32Tflops,
    /// Dense BF16 on tensor cores, TFLOP/s.
    Bf16Tflops,
}

impl Metric {
    /// The unit every figure of this metric must be given in.
    pub fn unit(self) -> &'static str {
        match self {
            Self::PcieGbps | Self::NvlinkGbps | Self::MemoryGbps => "GB/s",
            Self::Fp32Tflops | Self::Bf16Tflops => "TFLOP/s",
        }
    }
}

/// One published figure.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The product as the document names it.
    pub device: String,
    /// What it measures.
    pub metric: Metric,
    /// The value as published.
    pub value: f64,
    /// Its unit (must match the metric's).
    pub unit: String,
    /// How to read it (e.g. "both directions together").
    #[serde(default)]
    pub detail: String,
    /// The experiments (registry names) whose panels show it.
    pub experiments: Vec<String>,
    /// The document it comes from.
    pub source: Source,
}

/// A cited document.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Publisher and document title.
    pub title: String,
    /// Where to read it (https).
    pub url: String,
}

/// A recorded run with its provenance.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    /// GPU name as the driver reports it.
    pub device: String,
    /// NVIDIA driver version.
    pub driver_version: String,
    /// When the run was made (Unix seconds, from the bench document).
    pub recorded_at_unix: u64,
    /// GPU Lab version that made it.
    pub gpulab_version: String,
    /// The CUDA version the driver supports (absent in runs recorded before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    /// A test fixture made on the CPU by the GPU chain: never a GPU's measurement.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixture: bool,
    /// The bench document's experiments: `[{name, params, result | error}]`.
    #[schema(value_type = Vec<Object>)]
    pub experiments: Vec<Value>,
}

impl ReferenceFile {
    /// Whether this is a test fixture made on the CPU (never a GPU's measurement).
    pub fn is_fixture(&self) -> bool {
        self.recorded.as_ref().is_some_and(|r| r.fixture)
    }
}

/// The published memory bandwidth (GB/s) for the GPU named `card_name` (as the driver
/// names it, e.g. `NVIDIA H100 80GB HBM3`), with the figure's device: the figure whose
/// model (its first word, `H100`) is in the name and whose form matches (`PCIe` in both
/// names, or in neither). `None` when no figure, or more than one, fits.
pub fn published_memory_gbps(files: &[ReferenceFile], card_name: &str) -> Option<(f64, String)> {
    let pcie = card_name.contains("PCIe");
    let mut fits = files
        .iter()
        .filter(|f| f.kind == Kind::Published)
        .flat_map(|f| &f.figures)
        .filter(|f| f.metric == Metric::MemoryGbps)
        .filter(|f| {
            let model = f.device.split_whitespace().next().unwrap_or_default();
            !model.is_empty() && card_name.contains(model) && f.device.contains("PCIe") == pcie
        });
    match (fits.next(), fits.next()) {
        (Some(f), None) => Some((f.value, f.device.clone())),
        _ => None,
    }
}

/// Every problem with `file` (empty when it is fine), in words an author can act on.
pub fn validate(file: &ReferenceFile, known: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    if file.title.trim().is_empty() || file.note.trim().is_empty() {
        problems.push("`title` and `note` must say what the numbers are".to_string());
    }
    match file.kind {
        Kind::Published => {
            if file.figures.is_empty() || file.recorded.is_some() {
                problems.push("a `published` file lists `figures` and no `recorded`".into());
            }
            if !file.note.to_lowercase().contains("not measured") {
                problems
                    .push("a `published` file's note must say the figures are not measured".into());
            }
            for (i, f) in file.figures.iter().enumerate() {
                let at = format!("figure {} ({} {:?})", i + 1, f.device, f.metric);
                if !(f.value.is_finite() && f.value > 0.0) {
                    problems.push(format!("{at}: value must be a positive number"));
                }
                if f.unit != f.metric.unit() {
                    problems.push(format!(
                        "{at}: unit `{}` should be `{}`",
                        f.unit,
                        f.metric.unit()
                    ));
                }
                if !f.source.url.starts_with("https://") || f.source.title.trim().is_empty() {
                    problems.push(format!("{at}: the source needs a title and an https URL"));
                }
                if f.experiments.is_empty() {
                    problems.push(format!("{at}: name the experiments that show it"));
                }
                for name in f
                    .experiments
                    .iter()
                    .filter(|n| !known.contains(&n.as_str()))
                {
                    problems.push(format!("{at}: unknown experiment `{name}`"));
                }
            }
        }
        Kind::Recorded => match &file.recorded {
            None => problems.push("a `recorded` file needs its `recorded` run".into()),
            Some(r) if r.device.trim().is_empty() || r.driver_version.trim().is_empty() => {
                problems.push("the recorded run must name its device and driver".into());
            }
            Some(r) if r.experiments.is_empty() => {
                problems.push("the recorded run has no experiments".into());
            }
            Some(_) => {}
        },
    }
    problems
}

/// Why a bench document cannot be imported.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImportError {
    /// Not JSON at all.
    #[error("not a JSON document: {0}")]
    NotJson(String),
    /// JSON, but not what `gpulab bench all --json` writes.
    #[error("not a `gpulab bench all --json` document: {0}")]
    Shape(String),
    /// Recorded without a GPU.
    #[error(
        "this run was made on the CPU backend; a reference must come from a GPU (`--fixture` makes a test fixture of it)"
    )]
    NotGpu,
}

fn text<'a>(doc: &'a Value, path: &[&str]) -> Result<&'a str, ImportError> {
    let mut at = doc;
    for key in path {
        at = at
            .get(key)
            .ok_or_else(|| ImportError::Shape(format!("`{}` is missing", path.join("."))))?;
    }
    at.as_str()
        .ok_or_else(|| ImportError::Shape(format!("`{}` must be a string", path.join("."))))
}

/// The reference file for the bench document `json`, and the file name it should get.
/// A `fixture` may come from the CPU backend and is marked as a test fixture.
pub fn import(json: &str, fixture: bool) -> Result<(String, ReferenceFile), ImportError> {
    let doc: Value = serde_json::from_str(json).map_err(|e| ImportError::NotJson(e.to_string()))?;
    let version = text(&doc, &["gpulab_version"])?.to_string();
    let at = doc
        .get("generated_at_unix")
        .and_then(Value::as_u64)
        .ok_or_else(|| ImportError::Shape("`generated_at_unix` must be a whole number".into()))?;
    if text(&doc, &["device", "kind"])? != "cuda" && !fixture {
        return Err(ImportError::NotGpu);
    }
    let device = text(&doc, &["device", "name"])?.to_string();
    let driver = match doc.pointer("/device/driver_version") {
        Some(Value::Null) | None if fixture => "none (CPU)".to_string(),
        _ => text(&doc, &["device", "driver_version"])?.to_string(),
    };
    let cuda_version = doc
        .pointer("/device/cuda_driver_version")
        .and_then(Value::as_str)
        .map(str::to_string);
    let experiments = doc
        .get("experiments")
        .and_then(Value::as_array)
        .filter(|list| list.iter().any(|e| e.get("result").is_some()))
        .ok_or_else(|| ImportError::Shape("`experiments` must list at least one result".into()))?
        .clone();
    if experiments
        .iter()
        .any(|e| e.get("name").and_then(Value::as_str).is_none())
    {
        return Err(ImportError::Shape(
            "every experiment needs its `name`".into(),
        ));
    }
    let slug: String = device
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let (title, note, stem) = if fixture {
        (
            format!("Test fixture: GPU Lab's CPU chain on {device}, not a GPU"),
            format!(
                "A test fixture made by GPU Lab {version} on the CPU backend (tests/gpu/gpu-run.sh --cpu): not a GPU measurement, never shipped with a course."
            ),
            format!("recorded-fixture-{slug}-{at}.json"),
        )
    } else {
        (
            format!("GPU Lab run on {device}"),
            format!(
                "Measured by GPU Lab {version} with `gpulab bench all --json` on {device}, driver {driver}."
            ),
            format!("recorded-{slug}-{at}.json"),
        )
    };
    let file = ReferenceFile {
        kind: Kind::Recorded,
        title,
        note,
        figures: Vec::new(),
        recorded: Some(Recorded {
            device,
            driver_version: driver,
            recorded_at_unix: at,
            gpulab_version: version,
            cuda_version,
            fixture,
            experiments,
        }),
    };
    Ok((stem, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cards_memory_datasheet_is_the_one_published_figure_of_its_model_and_form() {
        let text =
            std::fs::read_to_string("content/reference-runs/published-nvidia-datasheets.json")
                .unwrap();
        let files = vec![serde_json::from_str::<ReferenceFile>(&text).unwrap()];
        let sxm = published_memory_gbps(&files, "NVIDIA H100 80GB HBM3").unwrap();
        assert_eq!(sxm, (3350.0, "H100 SXM".to_string()));
        let a100 = published_memory_gbps(&files, "NVIDIA A100 80GB PCIe").unwrap();
        assert_eq!(a100, (1935.0, "A100 80GB PCIe".to_string()));
        assert_eq!(
            published_memory_gbps(&files, "NVIDIA GeForce RTX 4090"),
            None
        );
    }

    fn bench(kind: &str) -> String {
        serde_json::json!({
            "gpulab_version": "0.1.0",
            "generated_at_unix": 1_763_900_000u64,
            "device": {"kind": kind, "name": "Test GPU 80GB", "driver_version": "999.1"},
            "experiments": [{"name": "transfer", "params": {}, "result": {"points": []}}],
        })
        .to_string()
    }

    #[test]
    fn a_gpu_bench_document_imports_with_its_provenance() {
        let (name, file) = import(&bench("cuda"), false).unwrap();
        assert_eq!(name, "recorded-test-gpu-80gb-1763900000.json");
        let run = file.recorded.as_ref().unwrap();
        assert_eq!(
            (run.device.as_str(), run.driver_version.as_str()),
            ("Test GPU 80GB", "999.1")
        );
        assert_eq!(
            (run.recorded_at_unix, run.gpulab_version.as_str()),
            (1_763_900_000, "0.1.0")
        );
        assert!(
            validate(&file, &["transfer"]).is_empty(),
            "{:?}",
            validate(&file, &["transfer"])
        );
    }

    #[test]
    fn a_cpu_run_imports_only_as_a_fixture_that_says_it_is_not_a_gpu() {
        let (name, file) = import(&bench("cpu"), true).unwrap();
        assert_eq!(name, "recorded-fixture-test-gpu-80gb-1763900000.json");
        let run = file.recorded.as_ref().unwrap();
        assert!(run.fixture);
        assert!(file.title.contains("not a GPU") && file.note.contains("not a GPU"));
        let (_, real) = import(&bench("cuda"), false).unwrap();
        assert!(!real.recorded.unwrap().fixture);
        assert!(
            !serde_json::to_string(&real.title)
                .unwrap()
                .contains("fixture")
        );
    }

    #[test]
    fn malformed_and_cpu_documents_are_refused_with_a_reason() {
        assert!(matches!(
            import("{not json", false),
            Err(ImportError::NotJson(_))
        ));
        assert_eq!(
            import(&bench("cpu"), false).unwrap_err(),
            ImportError::NotGpu
        );
        let no_results = bench("cuda").replace("\"result\"", "\"error\"");
        assert!(
            import(&no_results, false)
                .unwrap_err()
                .to_string()
                .contains("at least one result")
        );
        let err = import(r#"{"gpulab_version": 1}"#, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a `gpulab bench all --json` document: `gpulab_version` must be a string"
        );
    }

    #[test]
    fn a_published_figure_needs_a_source_a_matching_unit_and_a_known_experiment() {
        let good = Figure {
            device: "A100".into(),
            metric: Metric::PcieGbps,
            value: 64.0,
            unit: "GB/s".into(),
            detail: String::new(),
            experiments: vec!["transfer".into()],
            source: Source {
                title: "NVIDIA datasheet".into(),
                url: "https://example.com".into(),
            },
        };
        let file = |figures| ReferenceFile {
            kind: Kind::Published,
            title: "t".into(),
            note: "published peak, not measured".into(),
            figures,
            recorded: None,
        };
        assert!(validate(&file(vec![good.clone()]), &["transfer"]).is_empty());
        let bad = Figure {
            value: -1.0,
            unit: "TFLOP/s".into(),
            experiments: vec!["nope".into()],
            source: Source {
                title: String::new(),
                url: "http://x".into(),
            },
            ..good
        };
        let problems = validate(&file(vec![bad]), &["transfer"]);
        assert_eq!(problems.len(), 4, "{problems:?}");
        let unmarked = ReferenceFile {
            note: "peaks".into(),
            ..file(vec![])
        };
        assert_eq!(validate(&unmarked, &["transfer"]).len(), 2);
    }

    #[test]
    fn the_shipped_files_are_valid() {
        let known: Vec<&str> = crate::experiments::REGISTRY
            .iter()
            .map(|e| e.name())
            .collect();
        let source = crate::course::ContentSource::Embedded;
        let files = source.list(DIR, ".json");
        assert!(!files.is_empty());
        for relative in files {
            let text = source.read(&relative).unwrap().unwrap();
            let file: ReferenceFile = serde_json::from_str(&text).unwrap();
            assert!(validate(&file, &known).is_empty(), "{relative}");
        }
    }
}
