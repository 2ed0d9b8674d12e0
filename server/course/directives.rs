//! Directives: fenced blocks that place a widget, a live experiment or a callout box in a
//! lesson. A widget or experiment becomes a placeholder element whose data attributes
//! carry its name and parameters (the browser script enhances it) and whose content is a
//! no-JavaScript fallback: a static table or a short text that teaches the same point.
//! Unknown names and unknown parameter keys are content errors, never a broken page.

use std::fmt::Write;

use super::fallbacks;
use super::html::escape;

/// Parameters of one directive: the TOML table in its body.
pub type Params = toml::Table;

/// What a directive places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An interactive widget that runs in the browser.
    Widget,
    /// A live experiment that runs on the server's GPU (or CPU).
    Experiment,
}

impl Kind {
    /// The word used in the fence's info string and in data attributes.
    pub fn word(self) -> &'static str {
        match self {
            Self::Widget => "widget",
            Self::Experiment => "experiment",
        }
    }
}

/// One known directive.
pub struct Spec {
    /// Widget or experiment.
    pub kind: Kind,
    /// Name used after the kind in the fence (`widget amdahl`).
    pub name: &'static str,
    /// Human title shown as the caption.
    pub title: &'static str,
    /// Parameter keys the body may set.
    pub keys: &'static [&'static str],
    /// Builds the no-JavaScript fallback HTML from the parameters.
    pub fallback: fn(&Params) -> String,
}

/// Every directive the course may use.
pub static SPECS: &[Spec] = &[
    widget(
        "parallel-race",
        "Parallel race: CPU cores against GPU cores",
        &["tasks", "cpu_cores", "gpu_cores"],
        fallbacks::parallel_race,
    ),
    widget(
        "amdahl",
        "Amdahl's law calculator",
        &["p", "n"],
        fallbacks::amdahl,
    ),
    widget(
        "gpu-architecture",
        "GPU architecture explorer",
        &["sms", "cores_per_sm"],
        fallbacks::gpu_architecture,
    ),
    widget(
        "thread-hierarchy",
        "Thread hierarchy visualiser",
        &["grid_blocks", "block_threads"],
        fallbacks::thread_hierarchy,
    ),
    widget(
        "memory-ladder",
        "Memory hierarchy ladder",
        &[],
        fallbacks::memory_ladder,
    ),
    widget(
        "env-decision-tree",
        "What does your machine say?",
        &[],
        fallbacks::env_decision_tree,
    ),
    widget(
        "transfer-simulator",
        "Device transfer simulator",
        &["bandwidth_gbps"],
        fallbacks::transfer_simulator,
    ),
    widget(
        "timeline",
        "CPU launches and GPU execution timeline",
        &["steps"],
        fallbacks::timeline,
    ),
    widget(
        "step-stepper",
        "One training step, row by row",
        &[],
        fallbacks::step_stepper,
    ),
    widget(
        "memory-budget",
        "Training memory budget calculator",
        &[
            "params",
            "precision",
            "optimizer",
            "batch",
            "seq",
            "hidden",
            "layers",
            "gpu",
        ],
        fallbacks::memory_budget,
    ),
    widget(
        "token-positions",
        "Token positions calculator",
        &["batch", "seq"],
        fallbacks::token_positions,
    ),
    widget(
        "symptom-triage",
        "Symptom triage",
        &[],
        fallbacks::symptom_triage,
    ),
    experiment(
        "matmul-crossover",
        "CPU against GPU matmul crossover",
        &["max_size"],
        fallbacks::matmul_crossover,
    ),
    experiment(
        "device-card",
        "This server's device card",
        &[],
        fallbacks::device_card,
    ),
    experiment(
        "doctor",
        "Server doctor: the layered GPU check",
        &[],
        fallbacks::doctor,
    ),
    experiment(
        "transfer-benchmark",
        "Host-device transfer benchmark",
        &["max_bytes"],
        fallbacks::transfer_benchmark,
    ),
    experiment(
        "timing-trap",
        "The timing trap, measured",
        &[],
        fallbacks::timing_trap,
    ),
    experiment(
        "training-run",
        "A real training run",
        &["batch", "hidden", "steps", "log_every", "precision"],
        fallbacks::training_run,
    ),
    experiment(
        "memory-snapshot",
        "GPU memory snapshot",
        &[],
        fallbacks::memory_snapshot,
    ),
    experiment(
        "allocator-playground",
        "Caching allocator playground",
        &[],
        fallbacks::allocator_playground,
    ),
    experiment(
        "precision-shootout",
        "Matmul precision shoot-out",
        &["size"],
        fallbacks::precision_shootout,
    ),
    experiment(
        "break-it",
        "Break it on purpose",
        &["case"],
        fallbacks::break_it,
    ),
];

const fn widget(
    name: &'static str,
    title: &'static str,
    keys: &'static [&'static str],
    fallback: fn(&Params) -> String,
) -> Spec {
    Spec {
        kind: Kind::Widget,
        name,
        title,
        keys,
        fallback,
    }
}

const fn experiment(
    name: &'static str,
    title: &'static str,
    keys: &'static [&'static str],
    fallback: fn(&Params) -> String,
) -> Spec {
    Spec {
        kind: Kind::Experiment,
        name,
        title,
        keys,
        fallback,
    }
}

/// The spec for `kind name`, if the course knows it.
pub fn find(kind: Kind, name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.kind == kind && s.name == name)
}

/// Renders `kind name` with the TOML `body` to its placeholder element.
pub fn render(kind: Kind, name: &str, body: &str) -> Result<String, String> {
    let spec = find(kind, name).ok_or_else(|| {
        let known: Vec<_> = SPECS
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.name)
            .collect();
        format!(
            "unknown {} `{name}` (known: {})",
            kind.word(),
            known.join(", ")
        )
    })?;
    let params: Params = toml::from_str(body).map_err(|e| {
        format!(
            "{} `{name}`: parameters are not valid TOML: {}",
            kind.word(),
            e.message().trim_end()
        )
    })?;
    for (key, value) in &params {
        if !spec.keys.contains(&key.as_str()) {
            return Err(format!(
                "{} `{name}` has no parameter `{key}` (it takes: {})",
                kind.word(),
                if spec.keys.is_empty() {
                    "none".to_string()
                } else {
                    spec.keys.join(", ")
                }
            ));
        }
        if value.is_table() || value.is_array() {
            return Err(format!(
                "{} `{name}`: parameter `{key}` must be a number, string or boolean",
                kind.word()
            ));
        }
    }
    let json = serde_json::to_string(&params).map_err(|e| e.to_string())?;
    let mut html = String::new();
    let word = kind.word();
    let label = match kind {
        Kind::Widget => "Interactive widget",
        Kind::Experiment => "Live experiment",
    };
    let _ = write!(
        html,
        "<figure class=\"directive {word}\" data-{word}=\"{name}\" data-params=\"{params}\">\n\
         <figcaption><span class=\"directive-kind\">{label}</span> {title}</figcaption>\n\
         <div class=\"fallback\">\n{fallback}</div>\n</figure>\n",
        params = escape(&json),
        title = escape(spec.title),
        fallback = (spec.fallback)(&params),
    );
    Ok(html)
}

/// The callout kinds and the label each box carries.
pub fn callout_label(kind: &str) -> Result<&'static str, String> {
    match kind {
        "mistakes" => Ok("Common mistakes"),
        "note" => Ok("Note"),
        "tip" => Ok("Tip"),
        other => Err(format!(
            "unknown callout `{other}` (known: mistakes, note, tip)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_renders_a_fallback_with_its_defaults() {
        for spec in SPECS {
            let html = render(spec.kind, spec.name, "").unwrap();
            assert!(html.contains(&format!("data-{}=\"{}\"", spec.kind.word(), spec.name)));
            let fallback = html.split("<div class=\"fallback\">").nth(1).unwrap();
            assert!(
                fallback.trim().len() > 80,
                "{} fallback is too thin: {fallback}",
                spec.name
            );
        }
    }

    #[test]
    fn unknown_names_and_keys_are_errors() {
        assert!(
            render(Kind::Widget, "amdal", "")
                .unwrap_err()
                .contains("unknown widget `amdal`")
        );
        assert!(
            render(Kind::Widget, "amdahl", "q = 1")
                .unwrap_err()
                .contains("no parameter `q`")
        );
        assert!(
            render(Kind::Widget, "amdahl", "p = [1]")
                .unwrap_err()
                .contains("must be a number")
        );
        assert!(render(Kind::Experiment, "amdahl", "").is_err());
    }

    #[test]
    fn params_travel_as_escaped_json() {
        let html = render(Kind::Widget, "amdahl", "p = 0.9\nn = 16").unwrap();
        assert!(
            html.contains("data-params=\"{&quot;n&quot;:16,&quot;p&quot;:0.9}\""),
            "{html}"
        );
    }
}
