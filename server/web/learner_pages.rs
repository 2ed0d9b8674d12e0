//! Pages rendered per request for the learner's path beyond lessons and quizzes: the
//! about page (this server's address and device card), search results and the course
//! completion page.

use askama::Template;

use super::page::Layout;
use crate::classroom::learner_flow::DeviceStatus;
use crate::course::Lesson;
use crate::course::search::Results;
use crate::format::{gib, thousands};
use crate::gpu::DeviceCard;

/// How to run GPU Lab, where this copy is served and what it runs on.
#[derive(Template)]
#[template(path = "about.html", config = "web/askama.toml")]
pub struct AboutPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Lessons in the course.
    pub lesson_count: usize,
    /// The server's version.
    pub version: &'static str,
    /// The address this page was served from: `http://host:port`.
    pub origin: String,
    /// What live experiments run on.
    pub device: &'a DeviceStatus,
    /// The device card as label and value rows.
    pub card: Vec<(&'static str, String)>,
    /// The script that mounts the live device card.
    pub script: String,
    /// The script of "Bring your GPU's run home" (the learner's own runs).
    pub runs_script: String,
}

/// The device card as rows for the about page (the live panel redraws it from
/// `/api/device`; these rows are what a reader without JavaScript sees).
pub fn card_rows(card: &DeviceCard) -> Vec<(&'static str, String)> {
    let mut rows = vec![(
        "Runs on",
        if card.kind.is_cuda() {
            "GPU (CUDA)".to_string()
        } else {
            "CPU (no GPU in use)".to_string()
        },
    )];
    if card.kind.is_cuda() {
        rows.push(("Name", card.name.clone()));
        if let Some(cc) = &card.compute_capability {
            rows.push(("Compute capability", cc.clone()));
        }
        if let Some(sms) = card.sm_count {
            rows.push(("Streaming multiprocessors", thousands(f64::from(sms))));
        }
        if card.memory_total_bytes.is_some() {
            rows.push(("Device memory", gib(card.memory_total_bytes)));
        }
        if let Some(mhz) = card.sm_clock_max_mhz {
            rows.push(("Max SM clock", format!("{} MHz", thousands(f64::from(mhz)))));
        }
        if let Some(pcie) = &card.pcie {
            rows.push((
                "PCIe link",
                format!(
                    "gen{} x{} (up to gen{} x{})",
                    pcie.generation, pcie.width, pcie.max_generation, pcie.max_width
                ),
            ));
        }
        rows.push((
            "NVIDIA driver",
            card.driver_version
                .clone()
                .unwrap_or_else(|| "unknown".into()),
        ));
        rows.push((
            "CUDA (highest the driver supports)",
            card.cuda_driver_version
                .clone()
                .unwrap_or_else(|| "unknown".into()),
        ));
    }
    rows.push((
        "Host CPU",
        format!(
            "{}, {} logical cores",
            card.cpu.model, card.cpu.logical_cores
        ),
    ));
    if card.cpu.memory_total_bytes.is_some() {
        rows.push(("Host RAM", gib(card.cpu.memory_total_bytes)));
    }
    rows.push(("Note", card.note.clone()));
    rows
}

/// Search results for one query.
#[derive(Template)]
#[template(path = "search.html", config = "web/askama.toml")]
pub struct SearchPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The query as typed (empty before a search).
    pub query: String,
    /// The results.
    pub results: Results,
}

/// The course completion page: a printable record of a passed final exam.
#[derive(Template)]
#[template(path = "completion.html", config = "web/askama.toml")]
pub struct CompletionPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The course's title.
    pub course_title: &'a str,
    /// The learner's display name, if chosen.
    pub name: Option<String>,
    /// The record, when the final exam is passed.
    pub record: Option<CompletionRecord>,
    /// The lessons the course covers.
    pub lessons: &'a [Lesson],
    /// Tuning labs passed, out of `labs_total`.
    pub labs_passed: usize,
    /// Tuning labs in the course.
    pub labs_total: usize,
    /// The page's print button script.
    pub script: String,
}

/// What the completion page certifies.
pub struct CompletionRecord {
    /// Best final-exam score in percent.
    pub percent: f64,
    /// Correct answers in that attempt.
    pub correct: u32,
    /// Questions in it.
    pub total: u32,
    /// The day the exam was first passed, in words.
    pub date: String,
    /// Lesson quizzes passed, out of `lesson_quizzes`.
    pub lessons_passed: usize,
    /// Lesson quizzes in the course.
    pub lesson_quizzes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_card_names_the_cpu_and_why() {
        let rows = card_rows(&crate::gpu::card::cpu_card("no NVIDIA driver"));
        assert_eq!(rows[0], ("Runs on", "CPU (no GPU in use)".to_string()));
        assert!(rows.iter().any(|(k, _)| *k == "Host CPU"));
        assert!(rows.iter().any(|(_, v)| v.contains("no NVIDIA driver")));
    }
}
