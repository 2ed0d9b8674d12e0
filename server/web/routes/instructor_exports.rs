//! The instructor's CSV downloads: `grades.csv` (best result per student and quiz, with
//! the first and latest attempt's time) and `missed.csv` (most-missed questions in
//! course order, counted per student, with the question's text and the section that
//! teaches it). Students appear by pseudonym, never by id; every cell is safe to open
//! in a spreadsheet.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::classroom::gradebook::ClassData;
use crate::db::gradebook;
use crate::web::error::AppError;
use crate::web::instructor_access::{Caller, require};
use crate::web::instructor_pages::missed_in_course_order;
use crate::web::state::AppState;

/// One row of `grades.csv`: the student by pseudonym, never by id (the id is the
/// student's cookie).
#[derive(Debug, Default, Serialize)]
struct GradeExport {
    student: String,
    display_name: Option<String>,
    quiz_id: String,
    best_percent: f64,
    attempts: u32,
    passed: bool,
    first_attempt_at: String,
    last_attempt_at: String,
}

/// One row of `missed.csv`.
#[derive(Debug, Default, Serialize)]
struct MissedExport {
    quiz_id: String,
    question_number: usize,
    question_id: String,
    question: String,
    section: String,
    section_title: String,
    students_missed: u32,
    students_answered: u32,
    students_never_right: u32,
    last_missed_at: String,
}

fn csv_response(name: &str, bytes: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// Rows as CSV, always under their header row (a class with no rows yet gets the header
/// alone, which a spreadsheet or script still reads), every cell safe to open in a
/// spreadsheet: a cell a spreadsheet would run as a formula (starting with `=`, `+`,
/// `@`, a tab or return, or `-` when it is not a number) gets a leading `'`, so a
/// student's display name can never execute.
fn csv_bytes<T: serde::Serialize + Default>(rows: &[T]) -> Result<Vec<u8>, AppError> {
    let fail = |e: &dyn std::fmt::Display| AppError::BadRequest(format!("csv: {e}"));
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row).map_err(|e| fail(&e))?;
    }
    // csv writes the header with the first row: with none, a blank row brings it,
    // and only the header is kept.
    if rows.is_empty() {
        writer.serialize(T::default()).map_err(|e| fail(&e))?;
    }
    let raw = writer.into_inner().map_err(|e| fail(&e))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(raw.as_slice());
    let mut safe = csv::Writer::from_writer(Vec::new());
    let records = if rows.is_empty() { 1 } else { usize::MAX };
    for record in reader.records().take(records) {
        let record = record.map_err(|e| fail(&e))?;
        safe.write_record(record.iter().map(neutralise_formula))
            .map_err(|e| fail(&e))?;
    }
    safe.into_inner().map_err(|e| fail(&e))
}

fn neutralise_formula(cell: &str) -> String {
    let risky = match cell.chars().next() {
        Some('=' | '+' | '@' | '\t' | '\r') => true,
        Some('-') => cell.parse::<f64>().is_err(),
        _ => false,
    };
    if risky {
        format!("'{cell}")
    } else {
        cell.to_string()
    }
}

/// `GET /instructor/grades.csv`: one row per student and attempted quiz.
pub async fn grades_csv(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Response, AppError> {
    require(&state, &caller)?;
    let class = ClassData::load(&state.classroom).await?;
    let rows: Vec<GradeExport> = class
        .cells
        .into_iter()
        .map(|cell| GradeExport {
            student: gradebook::pseudonym(&class.key, &cell.student_id),
            display_name: cell.display_name,
            quiz_id: cell.quiz_id,
            best_percent: cell.best_percent,
            attempts: cell.attempts,
            passed: cell.passed,
            first_attempt_at: cell.first_attempt_at,
            last_attempt_at: cell.last_attempt_at,
        })
        .collect();
    Ok(csv_response("gpulab-grades.csv", csv_bytes(&rows)?))
}

/// One row of `predictions.csv`.
#[derive(Default, Serialize)]
struct PredictionExport {
    student: String,
    display_name: Option<String>,
    experiment: String,
    quantity: String,
    params: String,
    predicted: f64,
    measured: f64,
    unit: String,
    factor: Option<f64>,
    verdict: String,
    within_2x: bool,
    backend: String,
    device: String,
    created_at: String,
}

/// `GET /instructor/predictions.csv`: every prediction, scored, oldest first.
pub async fn predictions_csv(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Response, AppError> {
    require(&state, &caller)?;
    let (key, names, rows) = state
        .db
        .run(|tx| {
            Ok((
                gradebook::pseudonym_key(tx)?,
                gradebook::display_names(tx)?,
                crate::db::predictions::all(tx)?,
            ))
        })
        .await?;
    let export: Vec<PredictionExport> = rows
        .into_iter()
        .map(|stored| {
            let row = stored.row;
            let scale = crate::experiments::prediction::scale_of(&row.quantity);
            let score = crate::experiments::prediction::score(row.predicted, row.measured, scale);
            PredictionExport {
                student: gradebook::pseudonym(&key, &row.student_id),
                display_name: names.get(&row.student_id).cloned(),
                experiment: row.experiment,
                quantity: row.quantity,
                params: row.params,
                predicted: row.predicted,
                measured: row.measured,
                unit: row.unit,
                factor: score.factor,
                verdict: score.verdict,
                within_2x: score.within_2x,
                backend: row.backend,
                device: row.device,
                created_at: stored.created_at,
            }
        })
        .collect();
    Ok(csv_response("gpulab-predictions.csv", csv_bytes(&export)?))
}

/// `GET /instructor/missed.csv`: missed questions in course order, per student.
pub async fn missed_csv(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Response, AppError> {
    require(&state, &caller)?;
    let class = ClassData::load(&state.classroom).await?;
    let rows: Vec<MissedExport> = missed_in_course_order(&state.course, class.missed)
        .into_iter()
        .map(|m| MissedExport {
            quiz_id: m.quiz_id,
            question_number: m.number,
            question_id: m.question_id,
            question: m.prompt,
            section: m
                .teaches
                .as_ref()
                .map(|t| t.href.clone())
                .unwrap_or_default(),
            section_title: m.teaches.map(|t| t.title).unwrap_or_default(),
            students_missed: m.counts.students_missed,
            students_answered: m.counts.students_answered,
            students_never_right: m.counts.students_never_right,
            last_missed_at: m.counts.last_missed_at,
        })
        .collect();
    Ok(csv_response(
        "gpulab-missed-questions.csv",
        csv_bytes(&rows)?,
    ))
}
