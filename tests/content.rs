//! Content tests: the real `content/` passes `gpulab check`, and each kind of broken
//! fixture course fails with the right `file:line: message`.

use std::process::Command;

use gpulab::course::{ContentSource, Course};

use crate::support::repo_path;

fn gpulab_check(dir: &str) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .arg("check")
        .arg("--content")
        .arg(repo_path(dir))
        .output()
        .expect("gpulab runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_real_course_passes_check() {
    let (ok, stdout, stderr) = gpulab_check("content");
    assert!(ok, "gpulab check failed:\n{stderr}");
    assert!(stdout.contains("9 lessons, no problems"), "{stdout}");
}

#[test]
fn the_real_course_matches_the_syllabus_outline() {
    let course = Course::load(&ContentSource::Dir(repo_path("content"))).expect("loads");
    let expected: &[&[&str]] = &[
        &[
            "widget parallel-race",
            "widget amdahl",
            "experiment matmul-crossover",
        ],
        &[
            "widget gpu-architecture",
            "widget thread-hierarchy",
            "widget memory-ladder",
            "experiment device-card",
        ],
        &["widget env-decision-tree", "experiment doctor"],
        &["widget transfer-simulator", "experiment transfer-benchmark"],
        &["widget timeline", "experiment timing-trap"],
        &["widget step-stepper", "experiment training-run"],
        &[
            "widget memory-budget",
            "widget token-positions",
            "experiment memory-snapshot",
            "experiment allocator-playground",
        ],
        &["experiment precision-shootout"],
        &["widget symptom-triage", "experiment break-it"],
    ];
    for (lesson, directives) in course.lessons.iter().zip(expected) {
        for directive in *directives {
            assert!(
                lesson.directives.iter().any(|d| d == directive),
                "{} lacks `{directive}`",
                lesson.slug
            );
        }
        assert!(
            lesson.directives.iter().any(|d| d.starts_with("widget ")),
            "{} has no widget",
            lesson.slug
        );
        assert!(
            lesson
                .directives
                .iter()
                .any(|d| d.starts_with("experiment ")),
            "{} has no experiment",
            lesson.slug
        );
        assert!(
            lesson.words >= 1200,
            "{} is only {} words",
            lesson.slug,
            lesson.words
        );
    }
}

fn assert_fails_with(dir: &str, location: &str, message: &str) {
    let (ok, _, stderr) = gpulab_check(dir);
    assert!(!ok, "{dir} should fail the check");
    let expected_prefix = format!("{}:", repo_path(dir).join(location).display());
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&expected_prefix))
        .unwrap_or_else(|| panic!("no problem at {expected_prefix} in:\n{stderr}"));
    assert!(line.contains(message), "{line}");
}

#[test]
fn broken_front_matter_points_at_its_line() {
    assert_fails_with(
        "tests/fixtures/broken-front-matter",
        "01-a/lesson.md:3",
        "front matter:",
    );
}

#[test]
fn a_missing_lesson_file_points_at_course_toml() {
    assert_fails_with(
        "tests/fixtures/missing-lesson",
        "course.toml:9",
        "lesson file",
    );
}

#[test]
fn an_unknown_directive_points_at_its_fence() {
    assert_fails_with(
        "tests/fixtures/unknown-directive",
        "01-a/lesson.md:12",
        "unknown widget `warp-drive`",
    );
}

#[test]
fn a_dangling_link_points_at_its_line() {
    assert_fails_with(
        "tests/fixtures/dangling-link",
        "01-a/lesson.md:10",
        "dangling link `/lessons/nowhere`",
    );
}

#[test]
fn the_server_refuses_to_start_on_broken_content() {
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args(["serve", "--addr", "127.0.0.1:0", "--content"])
        .arg(repo_path("tests/fixtures/dangling-link"))
        .arg("--database")
        .arg(tempfile::tempdir().unwrap().path().join("gpulab.db"))
        .output()
        .expect("gpulab runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("dangling link"), "{stderr}");
}

#[test]
fn broken_quizzes_point_at_the_question() {
    assert_fails_with(
        "tests/fixtures/broken-quiz",
        "01-a/quiz.toml:4",
        "exactly one correct option",
    );
    assert_fails_with(
        "tests/fixtures/broken-quiz",
        "exam/quiz.toml:2",
        "positive `tolerance`",
    );
}
