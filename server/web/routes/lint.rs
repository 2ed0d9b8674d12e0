//! The script doctor over HTTP: `GET /lint` (the form), `POST /lint` (a form post, so
//! the page works without JavaScript) and `POST /api/lint` (JSON). Each check is
//! rate-limited per student, capped in size, parsed off the async runtime under the
//! parser's own time budget, and never stored: the script lives only for the request.

use askama::Template;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::experiments::prediction::format_factor;
use crate::lint::report::Explained;
use crate::lint::{self, LintError, MAX_SOURCE_BYTES, Rule};
use crate::web::error::{ApiError, AppError};
use crate::web::extract;
use crate::web::identity::StudentId;
use crate::web::lint_page::{LintPage, Shown};
use crate::web::state::AppState;

/// Largest request body: a script of [`MAX_SOURCE_BYTES`] grows up to threefold when a
/// form or JSON encodes it.
pub const MAX_BODY_BYTES: usize = 3 * MAX_SOURCE_BYTES + 4096;

/// What `POST /api/lint` takes.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LintRequest {
    /// The script's text (Python, up to 200 KB).
    pub source: String,
}

/// What `POST /api/lint` answers.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct LintReport {
    /// Every finding, in line order (empty when none).
    pub findings: Vec<Explained>,
}

/// The findings in `source` for `student`, each with this server's measured cost where
/// there is one.
async fn run_check(
    state: &AppState,
    student: &StudentId,
    source: String,
) -> Result<Vec<Explained>, AppError> {
    if let Err(wait) = state.lint_limiter.check(&student.0) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        return Err(AppError::TooMany {
            retry_after_secs: secs,
            message: format!(
                "You have checked {} scripts in the last minute, the most one student may. Try again in about {secs} s.",
                state.engine.limits.script_checks_per_minute
            ),
        });
    }
    if source.trim().is_empty() {
        return Err(AppError::Invalid(
            "The script is empty: paste a Python training script.".into(),
        ));
    }
    let outcome = tokio::task::spawn_blocking(move || lint::check(&source))
        .await
        .map_err(|_| AppError::Unavailable("The check stopped unexpectedly; try again.".into()))?;
    let findings = outcome.map_err(|error| match error {
        LintError::TooLarge(_) => AppError::Rejected(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The checker reads scripts of up to {} KB: {error}.",
                MAX_SOURCE_BYTES / 1024
            ),
        ),
        LintError::Syntax { .. } => {
            AppError::Invalid(format!("The script is not valid Python: {error}."))
        }
        LintError::Timeout => AppError::Invalid(format!("{error}.")),
    })?;
    let mut explained = Vec::with_capacity(findings.len());
    for finding in &findings {
        let mut one = Explained::new(finding);
        one.measured = measured_cost(state, finding).await;
        explained.push(one);
    }
    Ok(explained)
}

/// The sentence quoting this server's latest measurement of the cost behind
/// `finding`'s rule (only on a GPU: a CPU stand-in never speaks for a GPU).
async fn measured_cost(state: &AppState, finding: &lint::Finding) -> Option<String> {
    let rule = finding.rule();
    let (quantity, _) = rule.experiment.as_ref()?.measured?;
    if !state.device.gpu {
        return None;
    }
    measured_sentence(rule, state.classroom.measurements.newest(quantity).await)
}

/// The sentence quoting `newest`, the latest measurement of `rule`'s cost, when an
/// experiment run has measured it.
pub fn measured_sentence(rule: &Rule, newest: Option<f64>) -> Option<String> {
    let (_, sentence) = rule.experiment.as_ref()?.measured?;
    Some(sentence.replace("{value}", &format_factor(newest?)))
}

/// `GET /lint`: the empty form.
pub async fn page(State(state): State<AppState>) -> Result<Html<String>, AppError> {
    Ok(Html(
        LintPage::new(&state.layout, state.assets.url("js/lint.js")).render()?,
    ))
}

/// `POST /lint`: a form post with `source`; the page with the findings (or why there
/// are none), the script echoed into the form.
pub async fn check_form(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, AppError> {
    let source = extract::form(&body)?
        .into_iter()
        .find(|(name, _)| name == "source")
        .map(|(_, value)| value)
        .ok_or_else(|| AppError::BadRequest("the form has no `source` field".into()))?;
    let mut page = LintPage::new(&state.layout, state.assets.url("js/lint.js"));
    page.checked = true;
    let status = match run_check(&state, &student, source.clone()).await {
        Ok(findings) => {
            page.findings = findings
                .into_iter()
                .map(|f| Shown::new(f, &source, &state.course))
                .collect();
            StatusCode::OK
        }
        Err(error @ (AppError::Invalid(_) | AppError::Rejected(..))) => {
            page.error = Some(error.to_string());
            if matches!(error, AppError::Rejected(..)) {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            }
        }
        Err(other) => return Err(other),
    };
    page.source = source;
    Ok((status, Html(page.render()?)).into_response())
}

/// Checks a PyTorch training script for the course's pitfalls, without running it.
#[utoipa::path(post, path = "/api/lint", tag = "lint",
    request_body = LintRequest,
    responses(
        (status = 200, description = "The findings, in line order", body = LintReport),
        (status = 400, description = "Not JSON, or not `{\"source\": \"...\"}`", body = crate::web::error::ErrorBody),
        (status = 413, description = "The script is over 200 KB", body = crate::web::error::ErrorBody),
        (status = 422, description = "Empty, not valid Python (the message names the line), or too slow to parse", body = crate::web::error::ErrorBody),
        (status = 429, description = "This student's checks per minute are used up", body = crate::web::error::ErrorBody),
    ))]
pub async fn check_json(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Json<LintReport>, ApiError> {
    let request: LintRequest = extract::json(&body, r#"{"source": "import torch\n..."}"#)?;
    let findings = run_check(&state, &student, request.source).await?;
    Ok(Json(LintReport { findings }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::catalog::rule;

    #[test]
    fn a_measured_cost_is_quoted_only_from_a_measurement() {
        let sync = rule("GL101");
        assert_eq!(measured_sentence(sync, None), None, "nothing measured yet");
        let sentence = measured_sentence(sync, Some(1.6)).unwrap();
        assert!(sentence.contains("1.6×"), "{sentence}");
        assert!(
            !sentence.contains("{value}") && !sentence.contains("××"),
            "{sentence}"
        );
        assert_eq!(
            measured_sentence(rule("GL401"), Some(1.6)),
            None,
            "no experiment"
        );
    }
}
