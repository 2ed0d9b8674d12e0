//! The script doctor from the outside: every rule's lesson and experiment links resolve
//! against the built course (the corpus of real scripts is `lint_corpus`, the command's
//! options and formats `lint_cli`, the lessons' own code `lint_lessons`); `gpulab lint` prints linter lines, JSON and exit codes; and the
//! page and `POST /api/lint` answer findings, links and clear 4xx errors.

use std::process::Command;

use gpulab::course::{ContentSource, Course};
use gpulab::experiments::REGISTRY;
use gpulab::lint::{self, RULES};
use serde_json::{Value, json};

use crate::support::{self, repo_path};

const CORPUS: &str = "tests/fixtures/lint-corpus";

#[test]
fn every_rule_links_a_real_section_and_experiment() {
    let course = Course::load(&ContentSource::Dir(repo_path("content"))).expect("loads");
    let section_exists = |slug: &str, section: &str| {
        course
            .lessons
            .iter()
            .find(|l| l.slug == slug)
            .is_some_and(|l| l.toc.iter().any(|t| t.id == section))
    };
    for rule in RULES {
        assert!(
            section_exists(rule.lesson, rule.section),
            "{}: no section {}",
            rule.code,
            rule.lesson_url()
        );
        let Some(experiment) = &rule.experiment else {
            continue;
        };
        assert!(
            section_exists(experiment.lesson, experiment.section),
            "{}: no section {}",
            rule.code,
            experiment.url()
        );
        let lesson = course
            .lessons
            .iter()
            .find(|l| l.slug == experiment.lesson)
            .unwrap();
        assert!(
            lesson
                .directives
                .contains(&format!("experiment {}", experiment.name)),
            "{}: lesson {} places no experiment {} ({:?})",
            rule.code,
            lesson.slug,
            experiment.name,
            lesson.directives
        );
        if let Some((quantity, _)) = experiment.measured {
            let measured_by = REGISTRY
                .iter()
                .find(|e| e.quantities().iter().any(|q| q.key == quantity))
                .unwrap_or_else(|| panic!("{}: no experiment measures {quantity}", rule.code));
            assert_eq!(measured_by.directive(), experiment.name, "{}", rule.code);
        }
    }
}

fn gpulab_lint(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .arg("lint")
        .args(args)
        .current_dir(repo_path(""))
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

#[test]
fn the_command_prints_linter_lines_json_and_exit_codes() {
    let script = format!("{CORPUS}/nanogpt/train.py");
    let (status, text) = gpulab_lint(&[&script]);
    assert_eq!(status, Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{script}:")) && l.contains(": GL402 ")),
        "{text}"
    );
    let (status, text) = gpulab_lint(&["--format", "json", &script]);
    assert_eq!(status, Some(1));
    let report: Value = serde_json::from_str(&text).unwrap();
    let first = &report[0]["findings"][0];
    assert!(
        first["lesson_url"]
            .as_str()
            .unwrap()
            .starts_with("/lessons/")
    );
    assert!(first["line"].as_u64().unwrap() > 0);

    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.py");
    std::fs::write(&clean, "import torch\nx = torch.zeros(3)\n").unwrap();
    let broken = dir.path().join("broken.py");
    std::fs::write(&broken, "def f(:\n    pass\n").unwrap();
    let (status, text) = gpulab_lint(&[clean.to_str().unwrap()]);
    assert_eq!((status, text.as_str()), (Some(0), ""));
    let (status, text) = gpulab_lint(&[broken.to_str().unwrap()]);
    assert_eq!(status, Some(2), "not Python: could not check");
    assert!(
        text.contains("broken.py:1:") && text.contains("E999"),
        "{text}"
    );
    let (status, _) = gpulab_lint(&["/no/such/file.py"]);
    assert_eq!(status, Some(2));
}

const SCRIPT: &str = "import torch\nfor step, (x, y) in enumerate(loader):\n    loss = crit(model(x.cuda()), y.cuda())\n    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n    print(loss.item())\n";

#[tokio::test]
async fn the_api_answers_findings_with_links_and_clear_errors() {
    let app = support::spawn().await;
    let url = format!("{}/api/lint", app.base);
    let response = app
        .client
        .post(&url)
        .json(&json!({"source": SCRIPT}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let sync = body["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "GL101")
        .expect("the per-step .item() is found");
    assert_eq!(sync["line"], 7);
    assert_eq!(
        sync["lesson_url"],
        "/lessons/async-and-timing#logging-without-stalling"
    );
    assert_eq!(
        sync["experiment_url"],
        "/lessons/training-step#a-real-run-on-the-server"
    );
    assert!(
        sync["measured"].is_null(),
        "no GPU here, so no measured cost"
    );

    let syntax = app
        .client
        .post(&url)
        .json(&json!({"source": "import torch\nfor x in:\n"}))
        .send()
        .await
        .unwrap();
    assert_eq!(syntax.status(), 422);
    let message = support::hostile::message(&syntax.json().await.unwrap()).to_string();
    assert!(message.contains("line 2"), "{message}");

    let big = "x = 1\n".repeat(lint::MAX_SOURCE_BYTES / 6 + 10);
    let too_big = app
        .client
        .post(&url)
        .json(&json!({ "source": big }))
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);

    let not_json = app.client.post(&url).body("source=x").send().await.unwrap();
    assert_eq!(not_json.status(), 400);
    let empty = app
        .client
        .post(&url)
        .json(&json!({"source": "  \n"}))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), 422);
    let stranger = support::new_browser()
        .post(&url)
        .json(&json!({"source": SCRIPT}))
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), 403, "no student cookie, no check");
}

#[tokio::test]
async fn checks_are_rate_limited_per_student() {
    let app = support::spawn().await;
    let url = format!("{}/api/lint", app.base);
    let limit = gpulab::config::Limits::DEFAULT.script_checks_per_minute;
    // The limiter refills one check every 60/limit s, so on a slow, busy machine a
    // check may come back between the burst's requests: send until the first 429 and
    // allow exactly the refills the elapsed time explains.
    let started = std::time::Instant::now();
    let mut statuses = Vec::new();
    while statuses.len() < 2 * limit as usize && statuses.last() != Some(&429) {
        let response = app
            .client
            .post(&url)
            .json(&json!({"source": "import torch\n"}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    let refills = (started.elapsed().as_secs_f64() / (60.0 / f64::from(limit))).ceil() as usize;
    assert!(
        statuses[..limit as usize].iter().all(|s| *s == 200),
        "{statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    assert!(
        statuses.len() - 1 <= limit as usize + refills,
        "{} checks passed in {refills} refills' time: {statuses:?}",
        statuses.len() - 1
    );
    let other = support::student()
        .post(&url)
        .json(&json!({"source": "import torch\n"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200, "another student is not affected");
}

#[tokio::test]
async fn the_page_checks_a_form_post_and_is_linked_from_lessons_and_completion() {
    let app = support::spawn().await;
    let page = app.get("/lint").await.text().await.unwrap();
    assert!(page.contains("<textarea id=\"lint-source\" name=\"source\""));
    assert!(page.contains("GL101"), "the rules are listed");

    let response = support::client::post_form(
        &app.client,
        &format!("{}/lint", app.base),
        &[("source", SCRIPT)],
    )
    .await;
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(html.contains("data-code=\"GL101\""), "{html}");
    assert!(html.contains("href=\"/lessons/async-and-timing#logging-without-stalling\""));
    // The finding against the learner's own line: quoted, a caret under column 11,
    // the lesson section by its title, and how to keep the line on purpose.
    assert!(
        html.contains("7 | </span>    print(loss.item())\n<span aria-hidden=\"true\">    </span><span class=\"lint-caret\" aria-hidden=\"true\">          ^</span>"),
        "{html}"
    );
    assert!(html.contains(">Lesson 5, \u{201c}"), "{html}");
    assert!(
        html.contains("<code># noqa: GL101 your reason</code>"),
        "{html}"
    );
    let silenced = SCRIPT.replace(
        "print(loss.item())",
        "print(loss.item())  # noqa: GL101 on purpose",
    );
    let quiet = support::client::post_form(
        &app.client,
        &format!("{}/lint", app.base),
        &[("source", &silenced)],
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(
        !quiet.contains("data-code=\"GL101\""),
        "the noqa is honoured on the page"
    );
    let home = app.get("/").await.text().await.unwrap();
    assert!(
        home.matches("href=\"/lint\"").count() >= 2,
        "the home page links the checker in the navigation and in its body"
    );
    assert!(
        html.contains("print(loss.item())"),
        "the script is echoed into the form"
    );

    let broken = support::client::post_form(
        &app.client,
        &format!("{}/lint", app.base),
        &[("source", "def f(:\n")],
    )
    .await;
    assert_eq!(broken.status(), 422);
    assert!(broken.text().await.unwrap().contains("line 1"));

    for lesson in &app.state.course.lessons {
        let html = app
            .get(&format!("/lessons/{}", lesson.slug))
            .await
            .text()
            .await
            .unwrap();
        assert!(
            html.contains("<li><a href=\"/lint\">Check your script</a></li>")
                && html.matches("href=\"/lint\"").count() >= 2,
            "{} links the checker, in the navigation and in the lesson",
            lesson.slug
        );
    }
    let completion = app.get("/final-exam/complete").await.text().await.unwrap();
    assert!(completion.contains("href=\"/lint\""));
}
