//! Directives: fenced blocks that place a widget, a live experiment or a callout box in a
//! lesson. A widget or experiment becomes a placeholder element whose data attributes
//! carry its name and parameters (the browser script enhances it) and whose content is a
//! no-JavaScript fallback: a static table or a short text that teaches the same point.
//! Unknown names and unknown parameter keys are content errors, never a broken page.
//! Queued experiments are not listed here: their names, parameters, defaults and
//! fallback text come from the experiment registry (`crate::experiments`).

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

/// Every widget and every experiment panel that is not a registered experiment.
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

/// The spec for `kind name` among [`SPECS`].
pub fn find(kind: Kind, name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.kind == kind && s.name == name)
}

/// What a directive resolves to: a local spec, or a registered experiment.
enum Found {
    Local(&'static Spec),
    Registered(&'static dyn crate::experiments::DynExperiment),
}

impl Found {
    fn title(&self) -> &'static str {
        match self {
            Self::Local(spec) => spec.title,
            Self::Registered(e) => e.title(),
        }
    }

    fn keys(&self) -> Vec<String> {
        match self {
            Self::Local(spec) => spec.keys.iter().map(|k| (*k).to_string()).collect(),
            Self::Registered(e) => e
                .defaults()
                .as_object()
                .map(|fields| fields.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    fn fallback(&self, name: &str, params: &Params) -> Result<String, String> {
        match self {
            Self::Local(spec) => Ok((spec.fallback)(params)),
            Self::Registered(e) => {
                let overrides = serde_json::to_value(params)
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default();
                let text = e
                    .describe(&overrides)
                    .map_err(|error| format!("experiment `{name}`: {error}"))?;
                Ok(fallbacks::live(&text))
            }
        }
    }
}

fn resolve(kind: Kind, name: &str) -> Option<Found> {
    find(kind, name).map(Found::Local).or_else(|| {
        (kind == Kind::Experiment)
            .then(|| crate::experiments::by_directive(name))
            .flatten()
            .map(Found::Registered)
    })
}

/// Every directive name of `kind` the course may use.
pub fn names(kind: Kind) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = SPECS
        .iter()
        .filter(|s| s.kind == kind)
        .map(|s| s.name)
        .collect();
    if kind == Kind::Experiment {
        names.extend(crate::experiments::REGISTRY.iter().map(|e| e.directive()));
    }
    names
}

/// Renders `kind name` with the TOML `body` to its placeholder element.
pub fn render(kind: Kind, name: &str, body: &str) -> Result<String, String> {
    let found = resolve(kind, name).ok_or_else(|| {
        format!(
            "unknown {} `{name}` (known: {})",
            kind.word(),
            names(kind).join(", ")
        )
    })?;
    let params: Params = toml::from_str(body).map_err(|e| {
        format!(
            "{} `{name}`: parameters are not valid TOML: {}",
            kind.word(),
            e.message().trim_end()
        )
    })?;
    let keys = found.keys();
    for (key, value) in &params {
        if !keys.contains(key) {
            return Err(format!(
                "{} `{name}` has no parameter `{key}` (it takes: {})",
                kind.word(),
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
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
    let fallback = found.fallback(name, &params)?;
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
        title = escape(found.title()),
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
    fn every_directive_renders_a_fallback_with_its_defaults() {
        let all = [Kind::Widget, Kind::Experiment]
            .into_iter()
            .flat_map(|kind| names(kind).into_iter().map(move |name| (kind, name)));
        for (kind, name) in all {
            let html = render(kind, name, "").unwrap();
            assert!(html.contains(&format!("data-{}=\"{}\"", kind.word(), name)));
            let fallback = html.split("<div class=\"fallback\">").nth(1).unwrap();
            assert!(
                fallback.trim().len() > 80,
                "{name} fallback is too thin: {fallback}"
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
        let registered = render(
            Kind::Experiment,
            "training-run",
            "steps = 50\nprecision = \"bf16\"",
        );
        assert!(registered.unwrap().contains("50 steps"));
        assert!(
            render(Kind::Experiment, "training-run", "precision = 3")
                .unwrap_err()
                .contains("training-run")
        );
        assert!(
            render(Kind::Experiment, "training-run", "depth = 3")
                .unwrap_err()
                .contains("no parameter `depth`")
        );
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
