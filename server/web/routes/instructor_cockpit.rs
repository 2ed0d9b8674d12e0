//! The instructor's cockpit beyond the gradebook table: the live picture of the shared
//! GPU (`GET /instructor/live.json`, polled by the page), and the students themselves
//! (`POST /instructor/students/rename` and `/merge`). Every route here needs the
//! instructor's session or bearer token, like the gradebook.
//!
//! Students are named by their pseudonym (`s-…`, shown in the gradebook), never by
//! their id: the id is their cookie and must not appear in a page or a form.

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Redirect;

use crate::db::class_summary::{self, ClassMember, MissedByStudents};
use crate::db::experiment_history;
use crate::db::gradebook::{self, GradeCell};
use crate::db::student_identity;
use crate::web::error::AppError;
use crate::web::extract::MAX_NAME_CHARS;
use crate::web::gradebook_table::{Cell, Row};
use crate::web::instructor_access::{Caller, require};
use crate::web::instructor_pages::{GpuUseRow, LiveView, RecentRun, short_time};
use crate::web::state::AppState;

/// Finished experiments listed on the live view.
const RECENT_RUNS: usize = 20;

/// Everything the gradebook, its figures and the exports are built from.
pub struct ClassData {
    /// Best result per student and quiz, then per student and tuning lab.
    pub cells: Vec<GradeCell>,
    /// Students with attempts and their last activity.
    pub members: Vec<ClassMember>,
    /// Missed questions, counted per student.
    pub missed: Vec<MissedByStudents>,
    /// This database's pseudonym key.
    pub key: String,
}

impl ClassData {
    /// Reads it all in one go.
    pub async fn load(state: &AppState) -> Result<Self, AppError> {
        Ok(state
            .db
            .run(|tx| {
                Ok(Self {
                    cells: {
                        let mut cells = gradebook::grades(tx)?;
                        cells.extend(crate::db::lab_attempts::grades(tx)?);
                        cells
                    },
                    members: class_summary::members(tx)?,
                    missed: class_summary::missed_by_students(tx)?,
                    key: gradebook::pseudonym_key(tx)?,
                })
            })
            .await?)
    }

    /// One gradebook row per student, cells in the order of `quiz_ids`.
    pub fn rows(&self, quiz_ids: &[&str]) -> Vec<Row> {
        let mut by_student: HashMap<&str, Vec<&GradeCell>> = HashMap::new();
        for cell in &self.cells {
            by_student.entry(&cell.student_id).or_default().push(cell);
        }
        self.members
            .iter()
            .map(|member| {
                let pseudonym = gradebook::pseudonym(&self.key, &member.student_id);
                let cells = by_student.get(member.student_id.as_str());
                Row {
                    name: shown_name(member.display_name.as_deref(), &pseudonym),
                    last_active: member.last_active.clone(),
                    cells: quiz_ids
                        .iter()
                        .map(|id| {
                            let c = cells?.iter().find(|c| c.quiz_id == *id)?;
                            Some(Cell {
                                best_percent: c.best_percent,
                                attempts: c.attempts,
                                passed: c.passed,
                            })
                        })
                        .collect(),
                    pseudonym,
                }
            })
            .collect()
    }
}

/// A student's name as the instructor sees it.
pub fn shown_name(display_name: Option<&str>, pseudonym: &str) -> String {
    display_name.map_or_else(|| format!("anonymous {pseudonym}"), str::to_string)
}

/// The shared GPU now: device, memory, queue, use per student and the latest runs.
pub async fn live_view(state: &AppState) -> Result<LiveView, AppError> {
    let (names, key, recent, totals) = state
        .db
        .run(|tx| {
            Ok((
                gradebook::display_names(tx)?,
                gradebook::pseudonym_key(tx)?,
                experiment_history::recent(tx, RECENT_RUNS)?,
                experiment_history::totals_by_student(tx)?,
            ))
        })
        .await?;
    let name = |id: &str| {
        shown_name(
            names.get(id).map(String::as_str),
            &gradebook::pseudonym(&key, id),
        )
    };
    let playgrounds = state.engine.playgrounds.clone();
    let memory =
        tokio::task::spawn_blocking(move || crate::playground::snapshot(playgrounds.source()))
            .await
            .ok();
    let (used, total) = match &memory {
        Some(m) if m.backend.is_cuda() => (m.nvml_used_bytes, m.nvml_total_bytes),
        Some(m) => (
            m.host_total_bytes
                .zip(m.host_available_bytes)
                .map(|(t, a)| t.saturating_sub(a)),
            m.host_total_bytes,
        ),
        None => (None, None),
    };
    let mib = |bytes: Option<u64>| bytes.map(|b| (b as f64 / f64::from(1u32 << 20)).round());
    // Waiting or running now, and refused since start-up, from the queue's own records.
    let now: HashMap<String, (u64, u64)> = state
        .engine
        .usage()
        .await
        .into_iter()
        .map(|(id, u)| {
            let active = u.submitted.saturating_sub(u.done + u.failed);
            (id, (active, u.rejected))
        })
        .collect();
    let mut ids: Vec<&String> = totals.iter().map(|(id, ..)| id).collect();
    ids.extend(
        now.keys()
            .filter(|id| !totals.iter().any(|(t, ..)| t == *id)),
    );
    let gpu_use = ids
        .into_iter()
        .map(|id| {
            let (done, failed, busy_secs) = totals
                .iter()
                .find(|(t, ..)| t == id)
                .map_or((0, 0, 0.0), |(_, d, f, s)| (*d, *f, *s));
            GpuUseRow {
                name: name(id),
                active_now: now.get(id).map_or(0, |n| n.0),
                refused: now.get(id).map_or(0, |n| n.1),
                done,
                failed,
                busy_secs,
                playground_mib: state.engine.playgrounds.reserved_by(id) as f64
                    / f64::from(1u32 << 20),
            }
        })
        .collect();
    let taken_at = state.db.run(crate::db::clock::text_to_the_second).await?;
    Ok(LiveView {
        device: state.engine.card.name.clone(),
        backend: state.engine.card.kind,
        memory_used_mib: mib(used),
        memory_total_mib: mib(total),
        queue: state.engine.stats().await,
        gpu_use,
        recent: recent
            .into_iter()
            .map(|stored| RecentRun::new(name(&stored.run.student_id), stored))
            .collect(),
        taken_at: short_time(&taken_at),
    })
}

/// `GET /instructor/live.json`: [`LiveView`], for the page to refresh itself.
pub async fn live_json(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<LiveView>, AppError> {
    require(&state, &caller)?;
    Ok(Json(live_view(&state).await?))
}

/// The form's fields, only those named in `allowed` (anything else is a 400).
fn fields(body: &[u8], allowed: &[&str]) -> Result<HashMap<String, String>, AppError> {
    let mut found = HashMap::new();
    for (key, value) in crate::web::extract::form(body)? {
        if !allowed.contains(&key.as_str()) {
            return Err(AppError::BadRequest(format!("unknown form field `{key}`")));
        }
        found.insert(key, value.trim().to_string());
    }
    Ok(found)
}

/// The student whose pseudonym is `field`'s value.
async fn student_by_pseudonym(
    state: &AppState,
    form: &HashMap<String, String>,
    field: &str,
) -> Result<String, AppError> {
    let given = form
        .get(field)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| AppError::Invalid(format!("the form needs `{field}`: a pseudonym such as s-0123456789abcdef from the gradebook")))?
        .trim_start_matches("anonymous ")
        .to_string();
    let found = state
        .db
        .run(move |tx| gradebook::student_by_pseudonym(tx, &given))
        .await?;
    found.ok_or_else(|| {
        AppError::Invalid(format!(
            "no student has the pseudonym given as `{field}`; copy it from the gradebook's Student column"
        ))
    })
}

/// `POST /instructor/students/rename` with `student` (a pseudonym) and `display_name`
/// (empty clears it).
pub async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    let form = fields(&body, &["student", "display_name"])?;
    let name = form.get("display_name").cloned().unwrap_or_default();
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(AppError::Invalid(format!(
            "a display name has at most {MAX_NAME_CHARS} characters and no control characters"
        )));
    }
    let student = student_by_pseudonym(&state, &form, "student").await?;
    let name = (!name.is_empty()).then_some(name);
    state
        .db
        .run(move |tx| student_identity::rename(tx, &student, name.as_deref()))
        .await?;
    Ok(Redirect::to("/instructor?saved=renamed#students"))
}

/// `POST /instructor/students/merge` with `from` and `into` (pseudonyms): `from`'s
/// attempts and experiments move to `into`, and `from` is deleted.
pub async fn merge(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    let form = fields(&body, &["from", "into"])?;
    let from = student_by_pseudonym(&state, &form, "from").await?;
    let into = student_by_pseudonym(&state, &form, "into").await?;
    if from == into {
        return Err(AppError::Invalid(
            "a student cannot be merged into themselves".into(),
        ));
    }
    state
        .db
        .run(move |tx| student_identity::merge(tx, &from, &into))
        .await?;
    Ok(Redirect::to("/instructor?saved=merged#students"))
}
