//! The tuning labs' attempts: one row per graded lab run, written by the worker in the
//! same transaction that records the run ([`super::job_claims::complete`]), and read as
//! gradebook cells (best score and attempts per student and lab, the column id
//! `lab:<lab>`), as the labs a student has passed (home and completion pages), and as
//! a student's record per lab with the latest attempt's graded criteria (the Labs
//! page, readable without JavaScript).

use serde::{Deserialize, Serialize};

use super::clock::text_now as now;
use super::gradebook::GradeCell;
use super::{DbError, Tx};
use crate::params;

/// The gradebook column id of lab `lab` (`lab:feed-the-gpu`).
pub fn column(lab: &str) -> String {
    format!("lab:{lab}")
}

/// A graded tuning-lab run, as the gradebook keeps it (built from the lab's typed
/// result by the worker that ran it).
#[derive(Debug, Clone, PartialEq)]
pub struct LabAttempt {
    /// The lab's name (`feed-the-gpu`).
    pub lab: &'static str,
    /// All criteria combined: `pass`, `fail`, `inconclusive` or `not-graded`.
    pub verdict: &'static str,
    /// Share of the graded criteria that passed, in percent.
    pub score_percent: f64,
    /// The graded criteria and the explanation, as the learner read them.
    pub summary: Summary,
}

/// Records `attempt`, run on `backend`, for `student`.
pub fn record(
    tx: &mut Tx,
    student: &str,
    attempt: &LabAttempt,
    backend: &str,
) -> Result<(), DbError> {
    let score = attempt.score_percent.clamp(0.0, 100.0);
    let summary = serde_json::to_string(&attempt.summary).ok();
    let now = now(tx);
    tx.execute(
        &format!(
            "INSERT INTO lab_attempts (student_id, lab, verdict, score, passed, backend, attempted_at, summary)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, {now}, ?7)"
        ),
        params![
            student,
            attempt.lab,
            attempt.verdict,
            score,
            attempt.verdict == "pass",
            backend,
            summary
        ],
    )?;
    Ok(())
}

/// One graded criterion of an attempt, as the learner read it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CriterionLine {
    /// What was graded.
    pub name: String,
    /// `pass`, `fail`, `inconclusive` or `not-graded`.
    pub verdict: String,
    /// The numbers behind it.
    pub detail: String,
}

/// What an attempt's record keeps of its result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// The graded criteria.
    #[serde(default)]
    pub criteria: Vec<CriterionLine>,
    /// The explanation in the lesson's terms.
    #[serde(default)]
    pub explanation: Vec<String>,
}

/// A student's record in one lab: best score, attempts, whether passed, and the latest
/// attempt with what it graded.
#[derive(Debug, Clone, PartialEq)]
pub struct LabRecord {
    /// The lab's name (`feed-the-gpu`).
    pub lab: String,
    /// Best score in percent.
    pub best_score: f64,
    /// Attempts so far.
    pub attempts: i64,
    /// Passed at least once.
    pub passed: bool,
    /// The latest attempt's verdict.
    pub latest_verdict: String,
    /// Its backend (`cpu` or `cuda`).
    pub latest_backend: String,
    /// When it was graded (UTC, ISO 8601).
    pub latest_at: String,
    /// What it graded (empty for attempts stored before summaries were kept).
    pub latest: Summary,
}

/// `student`'s record in every lab attempted, by lab name.
pub fn records(tx: &mut Tx, student: &str) -> Result<Vec<LabRecord>, DbError> {
    let totals = tx.query(
        "SELECT lab, MAX(score), COUNT(*), MAX(passed) FROM lab_attempts
         WHERE student_id = ?1 GROUP BY lab ORDER BY lab",
        params![student],
    )?;
    let mut out = Vec::with_capacity(totals.len());
    for t in &totals {
        let lab: String = t.get(0)?;
        let latest = tx.query_row(
            "SELECT verdict, backend, attempted_at, summary FROM lab_attempts
             WHERE student_id = ?1 AND lab = ?2 ORDER BY id DESC LIMIT 1",
            params![student, lab],
        )?;
        let summary: Option<String> = latest.get(3)?;
        out.push(LabRecord {
            best_score: t.get(1)?,
            attempts: t.get(2)?,
            passed: t.get(3)?,
            latest_verdict: latest.get(0)?,
            latest_backend: latest.get(1)?,
            latest_at: latest.get(2)?,
            latest: summary
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default(),
            lab,
        });
    }
    Ok(out)
}

/// Every student's best lab score, attempts and pass, as gradebook cells.
pub fn grades(tx: &mut Tx) -> Result<Vec<GradeCell>, DbError> {
    tx.query(
        "SELECT a.student_id, s.display_name, a.lab, MAX(a.score), COUNT(*), MAX(a.passed),
                MIN(a.attempted_at), MAX(a.attempted_at)
         FROM lab_attempts a LEFT JOIN students s ON s.id = a.student_id
         GROUP BY a.student_id, s.display_name, a.lab",
        params![],
    )?
    .iter()
    .map(|r| {
        let lab: String = r.get(2)?;
        Ok(GradeCell {
            student_id: r.get(0)?,
            display_name: r.get(1)?,
            quiz_id: column(&lab),
            best_percent: r.get(3)?,
            attempts: r.get(4)?,
            passed: r.get(5)?,
            first_attempt_at: r.get(6)?,
            last_attempt_at: r.get(7)?,
        })
    })
    .collect()
}

/// The labs `student` has passed at least once, by name.
pub fn passed(tx: &mut Tx, student: &str) -> Result<Vec<String>, DbError> {
    tx.query(
        "SELECT DISTINCT lab FROM lab_attempts WHERE student_id = ?1 AND passed = 1 ORDER BY lab",
        params![student],
    )?
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    fn attempt(lab: &'static str, verdict: &'static str, score_percent: f64) -> LabAttempt {
        LabAttempt {
            lab,
            verdict,
            score_percent,
            summary: Summary::default(),
        }
    }

    #[test]
    fn the_latest_attempt_keeps_its_criteria() {
        for (engine, db, _scratch) in backends() {
            let graded = LabAttempt {
                summary: Summary {
                    criteria: vec![CriterionLine {
                        name: "timer within 10%".into(),
                        verdict: "fail".into(),
                        detail: "0.12".into(),
                    }],
                    explanation: vec!["Without a sync the timer measures the queueing.".into()],
                },
                ..attempt("stop-waiting", "fail", 50.0)
            };
            db.run_blocking(|tx| record(tx, "cy", &graded, "cpu"))
                .unwrap();
            let rec = db.run_blocking(|tx| records(tx, "cy")).unwrap();
            assert_eq!(rec[0].latest_backend, "cpu", "{engine}");
            assert_eq!(
                rec[0].latest.criteria,
                [CriterionLine {
                    name: "timer within 10%".into(),
                    verdict: "fail".into(),
                    detail: "0.12".into()
                }]
            );
            assert_eq!(rec[0].latest.explanation.len(), 1);
            assert!(
                db.run_blocking(|tx| records(tx, "nobody"))
                    .unwrap()
                    .is_empty()
            );
        }
    }

    #[test]
    fn attempts_become_best_score_attempts_and_passes() {
        for (engine, db, _scratch) in backends() {
            db.run_blocking(|tx| {
                record(tx, "ann", &attempt("feed-the-gpu", "fail", 0.0), "cpu")?;
                record(
                    tx,
                    "ann",
                    &attempt("feed-the-gpu", "inconclusive", 50.0),
                    "cpu",
                )?;
                record(tx, "bob", &attempt("feed-the-gpu", "pass", 100.0), "cpu")?;
                Ok(())
            })
            .unwrap();
            let cells = db.run_blocking(grades).unwrap();
            let ann = cells.iter().find(|c| c.student_id == "ann").unwrap();
            assert_eq!(
                (ann.attempts, ann.passed, ann.best_percent),
                (2, false, 50.0),
                "{engine}"
            );
            assert_eq!(ann.quiz_id, "lab:feed-the-gpu");
            let bob = cells.iter().find(|c| c.student_id == "bob").unwrap();
            assert_eq!((bob.attempts, bob.passed), (1, true), "{engine}");
            assert_eq!(
                db.run_blocking(|tx| passed(tx, "bob")).unwrap(),
                ["feed-the-gpu"]
            );
            assert!(db.run_blocking(|tx| passed(tx, "ann")).unwrap().is_empty());
            let ann = db.run_blocking(|tx| records(tx, "ann")).unwrap();
            assert_eq!(ann.len(), 1, "{engine}");
            assert_eq!(
                (ann[0].attempts, ann[0].best_score, ann[0].passed),
                (2, 50.0, false)
            );
            assert_eq!(
                ann[0].latest_verdict, "inconclusive",
                "the latest, not the best"
            );
        }
    }
}
