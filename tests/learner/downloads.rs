//! Each lesson's code as a Python script and a Jupyter notebook: served with a file
//! name, holding every Python block of the lesson in order, the notebook in nbformat 4.
//! (Python's own parser and nbformat's validator check them in the e2e run.)

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::spawn;

#[tokio::test]
async fn every_lesson_with_code_offers_a_script_and_a_notebook() {
    let app = spawn().await;
    for lesson in &app.state.course.lessons {
        let python: Vec<&str> = lesson
            .outline
            .code
            .iter()
            .filter(|c| c.lang == "python")
            .map(|c| c.code.trim_end())
            .collect();
        assert!(!python.is_empty(), "{} has Python to download", lesson.slug);
        let page = app
            .get(&format!("/lessons/{}", lesson.slug))
            .await
            .text()
            .await
            .unwrap();
        let stem = format!("gpulab-{:02}-{}", lesson.number, lesson.slug);
        assert!(
            page.contains(&format!("download=\"{stem}.py\"")),
            "{}",
            lesson.slug
        );

        let script = app.get(&format!("/lessons/{}/code.py", lesson.slug)).await;
        assert_eq!(script.status(), StatusCode::OK);
        assert!(
            script.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/x-python")
        );
        let disposition = script.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(disposition, format!("attachment; filename=\"{stem}.py\""));
        let script = script.text().await.unwrap();
        let mut from = 0;
        for block in &python {
            let at = script[from..].find(block).unwrap_or_else(|| {
                panic!(
                    "{}: a Python block is missing or out of order:\n{block}",
                    lesson.slug
                )
            });
            from += at + block.len();
        }

        let notebook = app
            .get(&format!("/lessons/{}/code.ipynb", lesson.slug))
            .await;
        assert_eq!(notebook.status(), StatusCode::OK);
        let nb: Value = notebook.json().await.unwrap();
        assert_eq!(nb["nbformat"], 4);
        let cells = nb["cells"].as_array().unwrap();
        let code: Vec<String> = cells
            .iter()
            .filter(|c| c["cell_type"] == "code")
            .map(|c| {
                c["source"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(
            code, python,
            "{}: one code cell per Python block",
            lesson.slug
        );
    }
    let missing = app.get("/lessons/no-such-lesson/code.py").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}
