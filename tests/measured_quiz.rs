//! Hardware-graded quiz questions (issue 14 item 5): their answer is this server's own
//! recent measurement for the same parameters, run when missing, and the feedback shows
//! it. Right and wrong answers for each of the three questions in the course.

use serde_json::{Value, json};

use crate::support::jobs::run;
use crate::support::quiz::{MEASURED_SEED, json_answers, submit};
use crate::support::{spawn_unmeasured, spawn_with, student, test_config};

fn graded<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"] == id)
        .unwrap_or_else(|| panic!("{id} graded: {body}"))
}

/// `answers` with `value` for question `id`.
fn with(mut answers: Value, id: &str, value: f64) -> Value {
    answers["answers"][id] = json!(value);
    answers
}

#[tokio::test]
async fn a_missing_measurement_is_made_then_answers_are_graded_against_the_latest() {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_unmeasured(test_config(dir.path().join("gpulab.db"))).await;
    let quiz = app.state.course.quiz("async-and-timing").unwrap().clone();
    let client = student();
    let all_right = json_answers(&quiz, quiz.questions.len());

    // No measurement yet: grading runs the experiment (waiting a few seconds); a
    // retake a moment later finds it if the first run was still going.
    let mut shown = None;
    for _ in 0..20 {
        let body: Value = submit(
            &app,
            &client,
            "async-and-timing",
            &with(all_right.clone(), "hw-timing-factor", 1e9),
        )
        .await
        .json()
        .await
        .unwrap();
        let q = graded(&body, "hw-timing-factor");
        if q["counted"] == true {
            assert_eq!(q["correct"], false, "10⁹ is no server's factor");
            shown = Some(q["expected"].as_str().unwrap().to_string());
            break;
        }
        assert!(
            q["expected"]
                .as_str()
                .unwrap()
                .contains("not measured on this server yet")
        );
        assert_eq!(
            body["total"].as_u64().unwrap() as usize,
            quiz.questions.len() - 2,
            "uncounted questions leave the total"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let shown = shown.expect("the grader measured the timing trap");
    assert!(
        shown.contains("times (measured on this server; answers within 2× of it count)"),
        "{shown}"
    );

    // The learner runs the experiment: its value is the key now.
    let result = run(&app, "/api/experiments/timing", json!({})).await;
    let measured = result["measured"]["value"].as_f64().unwrap();
    for (answer, right) in [
        (measured, true),
        (measured * 1.9, true),
        (measured * 3.0, false),
        (measured / 3.0, false),
    ] {
        let body: Value = submit(
            &app,
            &client,
            "async-and-timing",
            &with(all_right.clone(), "hw-timing-factor", answer),
        )
        .await
        .json()
        .await
        .unwrap();
        let q = graded(&body, "hw-timing-factor");
        assert_eq!(
            q["correct"], right,
            "answer {answer} against {measured}: {q}"
        );
        let expected = q["expected"].as_str().unwrap();
        let value: f64 = expected
            .split(' ')
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        assert!(
            (value - measured).abs() <= 0.01 * measured.max(1.0),
            "feedback {expected} shows the measurement {measured}"
        );
    }
}

#[tokio::test]
async fn the_streams_and_logging_questions_take_the_servers_value_with_their_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_with(test_config(dir.path().join("gpulab.db"))).await;
    let client = student();
    for (quiz_id, id, within) in [
        ("async-and-timing", "hw-streams-speedup", 1.5),
        ("slow-or-broken", "hw-log-every-step", 1.5),
    ] {
        let quiz = app.state.course.quiz(quiz_id).unwrap().clone();
        let key = quiz.question(id).unwrap().measured.clone().unwrap();
        assert_eq!(key.within, within);
        let all_right = json_answers(&quiz, quiz.questions.len());
        // The seeded measurement is the key: the key is right, 2× off is wrong.
        let body: Value = submit(&app, &client, quiz_id, &all_right)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(body["correct"], body["total"], "{body}");
        let body: Value = submit(
            &app,
            &client,
            quiz_id,
            &with(all_right.clone(), id, MEASURED_SEED * 2.0),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(graded(&body, id)["correct"], false);
        // A run with the question's parameters replaces it; other parameters do not.
        app.state
            .classroom
            .measurements
            .record(&key.quantity, "{\"other\":1}", 1000.0)
            .unwrap();
        let path = format!("/api/experiments/{}", key.experiment);
        let measured = run(&app, &path, key.params.clone()).await["measured"]["value"]
            .as_f64()
            .unwrap();
        let body: Value = submit(
            &app,
            &client,
            quiz_id,
            &with(all_right.clone(), id, measured),
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(graded(&body, id)["correct"], true, "{}", graded(&body, id));
        let far = if measured > 1.0 {
            measured * 2.0
        } else {
            measured / 2.0
        };
        let body: Value = submit(&app, &client, quiz_id, &with(all_right, id, far))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(graded(&body, id)["correct"], false);
    }
}
