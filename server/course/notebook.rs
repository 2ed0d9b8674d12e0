//! A lesson's code as files to take away: a Python script and a Jupyter notebook, both
//! built from the lesson's code blocks and headings in page order.
//!
//! The script uses the "percent" cell format (`# %%`), which VS Code, PyCharm, Spyder
//! and Jupytext open as cells, and stays a valid Python file: headings, shell commands
//! and printed text become comments. The notebook is nbformat 4.5 (cell ids), with a
//! Markdown cell per heading, a code cell per Python block, and shell commands and
//! printed text as fenced Markdown so running the notebook never runs a shell command
//! by surprise.

use serde_json::{Value, json};

use super::Lesson;
use super::outline::{CodeBlock, Section};

/// One cell of the take-away, before it is written out in either format.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    /// Prose, as Markdown.
    Markdown(String),
    /// Python code to run.
    Code(String),
}

/// The download's file name without extension: `gpulab-04-where-tensors-live`.
pub fn file_stem(lesson: &Lesson) -> String {
    format!("gpulab-{:02}-{}", lesson.number, lesson.slug)
}

/// Whether the lesson has code worth downloading (at least one Python block).
pub fn has_code(lesson: &Lesson) -> bool {
    lesson.outline.code.iter().any(|c| is_python(&c.lang))
}

fn is_python(lang: &str) -> bool {
    matches!(lang, "python" | "py")
}

fn is_shell(lang: &str) -> bool {
    matches!(lang, "bash" | "sh" | "shell" | "console")
}

/// The cells: a title, then for each section that has code its heading, then its blocks.
fn cells(lesson: &Lesson) -> Vec<Cell> {
    let mut cells = vec![Cell::Markdown(format!(
        "# Lesson {}: {}\n\nThe code from the GPU Lab lesson at `/lessons/{}`, in the order the lesson shows it. Run the cells from the top: later ones use names defined earlier. Shell commands are shown as text; run them in a terminal.",
        lesson.number, lesson.title, lesson.slug
    ))];
    let mut last_section = None;
    for block in &lesson.outline.code {
        if last_section != Some(block.section) {
            last_section = Some(block.section);
            if let Some(heading) = heading(lesson.outline.sections.get(block.section)) {
                cells.push(Cell::Markdown(heading));
            }
        }
        cells.push(cell_for(block));
    }
    cells
}

fn heading(section: Option<&Section>) -> Option<String> {
    let section = section.filter(|s| s.id.is_some())?;
    let hashes = "#".repeat(usize::from(section.level.max(2)));
    Some(format!("{hashes} {}", section.title))
}

fn cell_for(block: &CodeBlock) -> Cell {
    let code = block.code.trim_end_matches('\n');
    if is_python(&block.lang) {
        return Cell::Code(code.to_string());
    }
    let (intro, fence) = if is_shell(&block.lang) {
        ("In a terminal:", "bash")
    } else {
        ("As the lesson shows it:", "text")
    };
    // A fence longer than any backtick run inside keeps the block closed.
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest.max(2) + 1);
    Cell::Markdown(format!("{intro}\n\n{ticks}{fence}\n{code}\n{ticks}"))
}

/// The lesson's code as a Python script in the percent cell format.
pub fn python_script(lesson: &Lesson) -> String {
    let mut out = String::new();
    for (i, cell) in cells(lesson).iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match cell {
            Cell::Markdown(text) => {
                out.push_str("# %% [markdown]\n");
                for line in text.lines() {
                    if line.is_empty() {
                        out.push_str("#\n");
                    } else {
                        out.push_str("# ");
                        out.push_str(line);
                        out.push('\n');
                    }
                }
            }
            Cell::Code(code) => {
                out.push_str("# %%\n");
                out.push_str(code);
                out.push('\n');
            }
        }
    }
    out
}

/// Notebook `source`: the text as lines, each but the last ending in `\n`.
fn source_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// The lesson's code as a Jupyter notebook (nbformat 4.5).
pub fn notebook(lesson: &Lesson) -> Value {
    let cells: Vec<Value> = cells(lesson)
        .iter()
        .enumerate()
        .map(|(i, cell)| {
            let id = format!("cell-{}", i + 1);
            match cell {
                Cell::Markdown(text) => json!({
                    "cell_type": "markdown",
                    "id": id,
                    "metadata": {},
                    "source": source_lines(text),
                }),
                Cell::Code(code) => json!({
                    "cell_type": "code",
                    "execution_count": null,
                    "id": id,
                    "metadata": {},
                    "outputs": [],
                    "source": source_lines(code),
                }),
            }
        })
        .collect();
    json!({
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "title": format!("GPU Lab, lesson {}: {}", lesson.number, lesson.title),
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::course::outline::Outline;

    fn lesson() -> Lesson {
        let mut outline = Outline::default();
        outline.text("Opening.");
        outline.code("python", "import torch\n");
        outline.heading(2, "check-it", "Check it");
        outline.code("bash", "nvidia-smi -L\n");
        outline.code("python", "x = torch.ones(3)\nprint(x)\n");
        outline.code("text", "tensor([1., 1., 1.])\n");
        outline.heading(3, "no-code", "No code here");
        outline.text("Just words.");
        Lesson {
            slug: "demo".into(),
            number: 4,
            title: "Where tensors live".into(),
            summary: String::new(),
            minutes: 1,
            objectives: vec![],
            html: String::new(),
            toc: vec![],
            directives: vec![],
            math_count: 0,
            code_count: 4,
            words: 0,
            outline,
        }
    }

    #[test]
    fn the_script_keeps_code_in_order_and_everything_else_as_comments() {
        let script = python_script(&lesson());
        let code: Vec<&str> = script
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        assert_eq!(code, vec!["import torch", "x = torch.ones(3)", "print(x)"]);
        assert!(script.contains("# ## Check it\n"), "{script}");
        assert!(script.contains("# nvidia-smi -L\n"), "{script}");
        assert!(script.contains("# tensor([1., 1., 1.])\n"), "{script}");
        assert!(
            !script.contains("No code here"),
            "sections without code are left out"
        );
        assert_eq!(file_stem(&lesson()), "gpulab-04-demo");
    }

    #[test]
    fn the_notebook_is_nbformat_4_5_with_one_cell_per_block() {
        let nb = notebook(&lesson());
        assert_eq!(
            (nb["nbformat"].as_u64(), nb["nbformat_minor"].as_u64()),
            (Some(4), Some(5))
        );
        let cells = nb["cells"].as_array().unwrap();
        let kinds: Vec<&str> = cells
            .iter()
            .map(|c| c["cell_type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            vec![
                "markdown", "code", "markdown", "markdown", "code", "markdown"
            ]
        );
        let ids: std::collections::HashSet<&str> =
            cells.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), cells.len(), "cell ids are unique");
        assert_eq!(
            cells[4]["source"],
            json!(["x = torch.ones(3)\n", "print(x)"])
        );
        assert_eq!(cells[4]["outputs"], json!([]));
        assert!(cells[4]["execution_count"].is_null());
        assert_eq!(cells[2]["source"], json!(["## Check it"]));
        let shell = cells[3]["source"].as_array().unwrap();
        assert_eq!(shell[0], "In a terminal:\n");
        assert_eq!(nb["metadata"]["kernelspec"]["name"], "python3");
    }
}
