//! Notebooks the course ships beside its lessons (`content/notebooks/*.ipynb`, such as
//! the one that serves the course on a free Colab GPU), served for download at
//! `/notebooks/<file>`. Each is checked when the course loads, as `gpulab check` does:
//! JSON, nbformat 4, a list of cells whose kinds Jupyter knows. (Its full schema is
//! checked by nbformat itself in tests/wheel/notebook.py, which also runs it.)

use serde_json::Value;

use super::problem::Problem;
use super::source::ContentSource;

/// The folder (inside the content folder) holding the notebooks.
pub const DIR: &str = "notebooks";

/// One notebook: its file name (the URL's last segment) and its text.
#[derive(Debug, Clone)]
pub struct Notebook {
    /// `gpulab-colab.ipynb`.
    pub file: String,
    /// The notebook's JSON, as written.
    pub text: String,
}

/// Every problem with one notebook's `text` (empty when it is fine).
pub fn check(text: &str) -> Vec<String> {
    let doc: Value = match serde_json::from_str(text) {
        Ok(doc) => doc,
        Err(e) => return vec![format!("not JSON: {e}")],
    };
    let mut problems = Vec::new();
    if doc.get("nbformat").and_then(Value::as_u64) != Some(4) {
        problems.push("`nbformat` must be 4".to_string());
    }
    match doc.get("cells").and_then(Value::as_array) {
        Some(cells) if !cells.is_empty() => {
            for (i, cell) in cells.iter().enumerate() {
                let kind = cell.get("cell_type").and_then(Value::as_str);
                if !matches!(kind, Some("code" | "markdown" | "raw")) {
                    problems.push(format!("cell {}: unknown `cell_type` {kind:?}", i + 1));
                }
            }
        }
        _ => problems.push("`cells` must list the notebook's cells".to_string()),
    }
    problems
}

/// Reads and checks every `notebooks/*.ipynb`, adding a problem per fault.
pub fn load(source: &ContentSource, problems: &mut Vec<Problem>) -> Vec<Notebook> {
    let mut out = Vec::new();
    for relative in source.list(DIR, ".ipynb") {
        let shown = source.display_path(&relative);
        let text = match source.read(&relative) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(e) => {
                problems.push(Problem::new(&shown, 1, e));
                continue;
            }
        };
        let found = check(&text);
        if found.is_empty() {
            let file = relative.rsplit('/').next().unwrap_or_default().to_string();
            out.push(Notebook { file, text });
        }
        problems.extend(found.into_iter().map(|m| Problem::new(&shown, 1, m)));
    }
    out
}

/// A lesson's link to `/notebooks/<name>`: fine when the course ships that notebook.
pub fn check_link(source: &ContentSource, name: &str) -> Result<(), String> {
    let relative = format!("{DIR}/{name}");
    if source.list(DIR, ".ipynb").contains(&relative) {
        Ok(())
    } else {
        Err(format!(
            "dangling link `/notebooks/{name}`: the course has no content/{relative}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_courses_colab_notebook_loads_and_a_broken_one_is_named() {
        let mut problems = Vec::new();
        let found = load(&ContentSource::Dir("content".into()), &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(found.iter().any(|n| n.file == "gpulab-colab.ipynb"));
        let content = ContentSource::Dir("content".into());
        assert_eq!(check_link(&content, "gpulab-colab.ipynb"), Ok(()));
        assert!(
            check_link(&content, "nope.ipynb")
                .unwrap_err()
                .contains("no content/notebooks/nope.ipynb")
        );
        assert!(check("{").iter().any(|p| p.starts_with("not JSON")));
        let v3 = r#"{"nbformat": 3, "cells": [{"cell_type": "heading"}]}"#;
        assert_eq!(
            check(v3),
            vec![
                "`nbformat` must be 4".to_string(),
                "cell 1: unknown `cell_type` Some(\"heading\")".to_string()
            ]
        );
    }
}
