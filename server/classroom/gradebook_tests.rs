//! Sorting, filtering, paging and class figures of the gradebook table.

use super::*;

fn row(name: &str, active: &str, cells: Vec<Option<(f64, u32, bool)>>) -> Row {
    Row {
        name: name.into(),
        pseudonym: format!("s-{name}"),
        last_active: active.into(),
        cells: cells
            .into_iter()
            .map(|c| {
                c.map(|(best_percent, attempts, passed)| Cell {
                    best_percent,
                    attempts,
                    passed,
                })
            })
            .collect(),
    }
}

fn query(pairs: &[(&str, &str)]) -> GradebookQuery {
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.to_string())
    };
    GradebookQuery {
        page: get("page"),
        sort: get("sort"),
        dir: get("dir"),
        q: get("q"),
        show: get("show"),
        saved: None,
    }
}

fn class() -> Vec<Row> {
    vec![
        row("Bo", "2026-01-02", vec![Some((50.0, 4, false)), None]),
        row(
            "ada",
            "2026-01-03",
            vec![Some((100.0, 1, true)), Some((80.0, 1, true))],
        ),
        row("Cy", "2026-01-01", vec![Some((75.0, 2, false)), None]),
    ]
}

fn names(rows: &[Row]) -> Vec<&str> {
    rows.iter().map(|r| r.name.as_str()).collect()
}

#[test]
fn sorts_by_name_quiz_activity_and_flag() {
    let ids = ["why-gpus", "final-exam"];
    let view = |pairs: &[(&str, &str)]| View::parse(&query(pairs), &ids).unwrap();
    let (rows, ..) = view(&[]).apply(class());
    assert_eq!(names(&rows), ["ada", "Bo", "Cy"], "case-insensitive names");
    let (rows, ..) = view(&[("sort", "why-gpus"), ("dir", "desc")]).apply(class());
    assert_eq!(names(&rows), ["ada", "Cy", "Bo"]);
    let (rows, ..) = view(&[("sort", "final-exam")]).apply(class());
    assert_eq!(
        names(&rows),
        ["Bo", "Cy", "ada"],
        "not attempted sorts lowest"
    );
    let (rows, ..) = view(&[("sort", "active")]).apply(class());
    assert_eq!(
        names(&rows),
        ["ada", "Bo", "Cy"],
        "most recent first by default"
    );
    let (rows, ..) = view(&[("sort", "stuck")]).apply(class());
    assert_eq!(
        rows[0].name, "Bo",
        "4 attempts and no pass is stuck; 2 is not"
    );
    assert!(!rows[1].stuck() && !rows[2].stuck());
}

#[test]
fn filters_and_pages_across_the_whole_class() {
    let ids = ["why-gpus"];
    let many: Vec<Row> = (0..250)
        .map(|i| {
            row(
                &format!("student {i:03}"),
                "2026",
                vec![Some((i as f64 / 2.5, 1, i >= 200))],
            )
        })
        .collect();
    let view = View::parse(
        &query(&[("sort", "why-gpus"), ("dir", "desc"), ("page", "3")]),
        &ids,
    )
    .unwrap();
    let (rows, matched, page, pages) = view.apply(many.clone());
    assert_eq!((matched, page, pages, rows.len()), (250, 3, 3, 50));
    assert_eq!(
        rows[0].name, "student 049",
        "page 3 continues the sorted order"
    );
    let view = View::parse(&query(&[("q", "STUDENT 12"), ("page", "9")]), &ids).unwrap();
    let (rows, matched, page, _) = view.apply(many);
    assert_eq!(
        (matched, page),
        (10, 1),
        "120–129, any case; a page past the end clamps"
    );
    assert!(rows.iter().all(|r| r.name.contains("12")));
    let stuck = View::parse(&query(&[("show", "stuck")]), &ids).unwrap();
    assert_eq!(names(&stuck.apply(class()).0), ["Bo"]);
}

#[test]
fn bad_parameters_are_refused_with_a_reason() {
    let ids = ["why-gpus"];
    for (pairs, words) in [
        (vec![("page", "0")], "page"),
        (vec![("page", "two")], "page"),
        (vec![("sort", "nope")], "why-gpus"),
        (vec![("dir", "up")], "asc or desc"),
        (vec![("show", "everyone")], "all or stuck"),
    ] {
        let error = View::parse(&query(&pairs), &ids).unwrap_err();
        assert!(
            matches!(&error, ClassroomError::Malformed(m) if m.contains(words)),
            "{pairs:?}: {error}"
        );
    }
    let long = "x".repeat(61);
    assert!(View::parse(&query(&[("q", &long)]), &ids).is_err());
}

#[test]
fn class_figures_count_only_those_who_attempted() {
    let figures = quiz_figures(&class(), 2);
    assert_eq!(
        figures[0],
        QuizFigures {
            attempted: 3,
            pass_rate: 33.3,
            median: 75.0,
            stuck: 1
        }
    );
    assert_eq!(
        (
            figures[1].attempted,
            figures[1].pass_rate,
            figures[1].median
        ),
        (1, 100.0, 80.0)
    );
    assert_eq!(median(&[10.0, 20.0, 30.0, 45.0]), 25.0);
    assert_eq!(median(&[]), 0.0);
}
