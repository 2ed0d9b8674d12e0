//! Lessons read without JavaScript: every directive's placeholder carries a fallback
//! that teaches the point on its own (a computed table or a short text).

use gpulab::course::directives::{Kind, names};

use crate::support::spawn;

#[tokio::test]
async fn every_directive_has_its_fallback_in_the_served_html() {
    let app = spawn().await;
    for lesson in &app.state.course.lessons {
        let html = app
            .get(&format!("/lessons/{}", lesson.slug))
            .await
            .text()
            .await
            .unwrap();
        // One module script enhances the page; everything below is in the HTML itself.
        assert_eq!(html.matches("<script").count(), 1, "{}", lesson.slug);
        assert!(html.contains("<script type=\"module\" src=\"/static/js/lesson.js?v="));
        let fallbacks: Vec<&str> = html.split("<div class=\"fallback\">").skip(1).collect();
        assert_eq!(fallbacks.len(), lesson.directives.len(), "{}", lesson.slug);
        for (fallback, directive) in fallbacks.iter().zip(&lesson.directives) {
            let body = fallback.split("</div>").next().unwrap();
            let text_len = body
                .split('<')
                .map(|s| s.split_once('>').map_or(s, |(_, t)| t))
                .map(str::trim)
                .collect::<String>()
                .len();
            assert!(
                text_len > 60,
                "{}: `{directive}` fallback is too thin: {body}",
                lesson.slug
            );
        }
    }
}

#[tokio::test]
async fn computed_fallbacks_show_the_syllabus_figures() {
    let app = spawn().await;
    let page = |slug: &'static str| {
        let base = app.base.clone();
        async move {
            reqwest::get(format!("{base}/lessons/{slug}"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let why = page("why-gpus").await;
    assert!(
        why.contains("1 / (1 − p) = 20.0×"),
        "Amdahl limit for p = 0.95"
    );
    let memory = page("gpu-memory").await;
    assert!(
        memory.contains("14.90 GiB"),
        "FP32 Adam floor for 1e9 parameters"
    );
    assert!(memory.contains("32 × 128 = 4,096"), "token positions");
    let tensors = page("where-tensors-live").await;
    assert!(tensors.contains("19,267,584 bytes"), "input batch size");
}

#[test]
fn every_known_directive_is_documented_in_the_content_readme() {
    let readme = std::fs::read_to_string(crate::support::repo_path("content/README.md")).unwrap();
    assert!(readme.contains("widget <name>") && readme.contains("experiment <name>"));
    let (widgets, experiments) = (names(Kind::Widget), names(Kind::Experiment));
    assert!(
        widgets.len() >= 12 && experiments.len() >= 10,
        "the syllabus names 12 widgets and 10 experiments: {widgets:?} {experiments:?}"
    );
}
