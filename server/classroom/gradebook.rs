//! The gradebook's read model ([`ClassData`]: every best result, member and missed
//! question, read in one transaction) and the table the instructor sorts, filters and
//! pages through: every
//! step happens on the server over the whole class (so sorting by a quiz sorts all 300
//! students, not the 100 on screen), driven by query parameters that work without
//! JavaScript. Also the class figures per quiz (pass rate, median best score) and the
//! "stuck" flag: several attempts at a quiz and no pass.

use std::collections::HashMap;

use serde::Deserialize;

use super::{Classroom, ClassroomError};
use crate::db::class_summary::{self, ClassMember, MissedByStudents};
use crate::db::gradebook::{self, GradeCell};

/// Students per gradebook page.
pub const ROWS_PER_PAGE: usize = 100;
/// Attempts without a pass after which a student is flagged as stuck on a quiz.
pub const STUCK_ATTEMPTS: u32 = 3;
/// Longest name filter accepted, in characters.
const MAX_FILTER_CHARS: usize = 60;

/// One student's best result on one quiz.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Best score in percent.
    pub best_percent: f64,
    /// Attempts made.
    pub attempts: u32,
    /// Passed at least once.
    pub passed: bool,
}

impl Cell {
    /// Several attempts and still no pass.
    pub fn stuck(&self) -> bool {
        !self.passed && self.attempts >= STUCK_ATTEMPTS
    }
}

/// One student's row.
#[derive(Debug, Clone)]
pub struct Row {
    /// Display name or pseudonym-based name.
    pub name: String,
    /// The pseudonym (`s-…`), by which the instructor renames and merges.
    pub pseudonym: String,
    /// Latest activity, UTC (ISO 8601), sortable as text.
    pub last_active: String,
    /// One cell per quiz column, `None` when not attempted.
    pub cells: Vec<Option<Cell>>,
}

impl Row {
    /// Stuck on at least one quiz.
    pub fn stuck(&self) -> bool {
        self.cells.iter().flatten().any(Cell::stuck)
    }
}

/// Class figures for one quiz column.
#[derive(Debug, Clone, PartialEq)]
pub struct QuizFigures {
    /// Students who attempted it.
    pub attempted: usize,
    /// Share of those who passed, in percent (one decimal).
    pub pass_rate: f64,
    /// Median best score of those who attempted, in percent.
    pub median: f64,
    /// Students stuck on it.
    pub stuck: usize,
}

/// The gradebook's query parameters, as sent (all optional).
#[derive(Debug, Default, Clone, Deserialize)]
pub struct GradebookQuery {
    /// Page, 1-based.
    pub page: Option<String>,
    /// `name`, `active`, `stuck` or a quiz id.
    pub sort: Option<String>,
    /// `asc` or `desc`.
    pub dir: Option<String>,
    /// Part of a name.
    pub q: Option<String>,
    /// `all` or `stuck`.
    pub show: Option<String>,
    /// `renamed` or `merged`: what the instructor just did (a confirmation).
    pub saved: Option<String>,
}

/// A column to sort by.
#[derive(Debug, Clone, PartialEq)]
pub enum SortKey {
    /// Student name.
    Name,
    /// Last activity.
    Active,
    /// Stuck first.
    Stuck,
    /// Best score on the quiz at this column index.
    Quiz(usize),
}

/// The validated view: what to show and in which order.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Page, 1-based (clamped to the pages there are when applied).
    pub page: usize,
    /// Sort column.
    pub sort: SortKey,
    /// Descending when true.
    pub descending: bool,
    /// Lower-cased name filter (empty: everyone).
    pub filter: String,
    /// Only stuck students.
    pub stuck_only: bool,
}

impl View {
    /// Validates `query` against the quiz ids; a clear message for anything unknown.
    pub fn parse(query: &GradebookQuery, quiz_ids: &[&str]) -> Result<Self, ClassroomError> {
        let page = match query.page.as_deref().filter(|p| !p.is_empty()) {
            None => 1,
            Some(p) => p.parse::<usize>().ok().filter(|p| *p >= 1).ok_or_else(|| {
                ClassroomError::Malformed(format!(
                    "`page` must be a whole number from 1, not `{p}`"
                ))
            })?,
        };
        let sort = match query.sort.as_deref().unwrap_or("name") {
            "" | "name" => SortKey::Name,
            "active" => SortKey::Active,
            "stuck" => SortKey::Stuck,
            quiz => SortKey::Quiz(quiz_ids.iter().position(|id| *id == quiz).ok_or_else(|| {
                ClassroomError::Malformed(format!(
                    "cannot sort by `{quiz}`: use name, active, stuck or a quiz id ({})",
                    quiz_ids.join(", ")
                ))
            })?),
        };
        let descending = match query.dir.as_deref().unwrap_or("") {
            "" => matches!(sort, SortKey::Active | SortKey::Stuck),
            "asc" => false,
            "desc" => true,
            other => {
                return Err(ClassroomError::Malformed(format!(
                    "`dir` is asc or desc, not `{other}`"
                )));
            }
        };
        let filter = query.q.as_deref().unwrap_or("").trim().to_lowercase();
        if filter.chars().count() > MAX_FILTER_CHARS {
            return Err(ClassroomError::Malformed(format!(
                "the name filter has at most {MAX_FILTER_CHARS} characters"
            )));
        }
        let stuck_only = match query.show.as_deref().unwrap_or("all") {
            "" | "all" => false,
            "stuck" => true,
            other => {
                return Err(ClassroomError::Malformed(format!(
                    "`show` is all or stuck, not `{other}`"
                )));
            }
        };
        Ok(Self {
            page,
            sort,
            descending,
            filter,
            stuck_only,
        })
    }

    /// Filters and sorts `rows`, then cuts out this view's page; returns the page's rows,
    /// the rows that matched, the page shown and the number of pages.
    pub fn apply(&self, mut rows: Vec<Row>) -> (Vec<Row>, usize, usize, usize) {
        rows.retain(|r| {
            (self.filter.is_empty() || r.name.to_lowercase().contains(&self.filter))
                && (!self.stuck_only || r.stuck())
        });
        let by_name = |a: &Row, b: &Row| a.name.to_lowercase().cmp(&b.name.to_lowercase());
        rows.sort_by(|a, b| {
            let primary = match self.sort {
                SortKey::Name => by_name(a, b),
                SortKey::Active => a.last_active.cmp(&b.last_active),
                SortKey::Stuck => a.stuck().cmp(&b.stuck()),
                SortKey::Quiz(i) => {
                    let score = |r: &Row| r.cells.get(i).cloned().flatten().map(|c| c.best_percent);
                    score(a)
                        .partial_cmp(&score(b))
                        .unwrap_or(std::cmp::Ordering::Equal)
                }
            };
            let primary = if self.descending {
                primary.reverse()
            } else {
                primary
            };
            primary.then_with(|| by_name(a, b))
        });
        let matched = rows.len();
        let pages = matched.div_ceil(ROWS_PER_PAGE).max(1);
        let page = self.page.clamp(1, pages);
        let shown = rows
            .into_iter()
            .skip((page - 1) * ROWS_PER_PAGE)
            .take(ROWS_PER_PAGE)
            .collect();
        (shown, matched, page, pages)
    }
}

/// Pass rate, median and stuck count for each quiz column, over every row.
pub fn quiz_figures(rows: &[Row], quizzes: usize) -> Vec<QuizFigures> {
    (0..quizzes)
        .map(|i| {
            let cells: Vec<&Cell> = rows
                .iter()
                .filter_map(|r| r.cells.get(i)?.as_ref())
                .collect();
            let passed = cells.iter().filter(|c| c.passed).count();
            let mut scores: Vec<f64> = cells.iter().map(|c| c.best_percent).collect();
            scores.sort_by(f64::total_cmp);
            QuizFigures {
                attempted: cells.len(),
                pass_rate: crate::course::quiz::percent(passed, cells.len()),
                median: median(&scores),
                stuck: cells.iter().filter(|c| c.stuck()).count(),
            }
        })
        .collect()
}

/// The median of sorted `values` (0 for none), to one decimal.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let middle = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    (middle * 10.0).round() / 10.0
}

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
    pub async fn load(classroom: &Classroom) -> Result<Self, ClassroomError> {
        Ok(classroom
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

#[cfg(test)]
#[path = "gradebook_tests.rs"]
mod tests;
