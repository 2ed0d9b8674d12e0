//! Quizzes: `quiz.toml` beside each lesson and `final-exam/quiz.toml`, parsed and checked
//! at start-up, and scored on the server. The answer key never leaves this module except
//! through [`Graded`] results, which are only built after an attempt is submitted.
//!
//! Grading an attempt, and the words the results show, live in [`super::grading`].
//!
//! Scoring rules: single choice is right when the one correct option is picked; multiple
//! choice is all-or-nothing (every correct option and no wrong one); numeric is right
//! when the answer is within the question's absolute tolerance. A quiz is passed when the
//! score is strictly greater than 75%.

use std::collections::{BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use super::problem::{LineIndex, Problem};
use super::search::SectionRef;

/// One quiz: a lesson's or the final exam.
#[derive(Debug, Clone)]
pub struct Quiz {
    /// The lesson slug, or `final-exam`.
    pub id: String,
    /// Shown as the quiz page's heading.
    pub title: String,
    /// Questions in display order.
    pub questions: Vec<Question>,
}

/// One question with its key.
#[derive(Debug, Clone)]
pub struct Question {
    /// Unique within its quiz.
    pub id: String,
    /// The question text.
    pub prompt: String,
    /// Why the right answer is right; shown after submission only.
    pub explanation: String,
    /// The kind, with options and key.
    pub kind: QuestionKind,
    /// The lesson section that teaches it, found when the course is loaded.
    pub teaches: Option<SectionRef>,
    /// For a hardware-graded question: the measurement its answer is graded against.
    pub measured: Option<MeasuredKey>,
}

/// What a hardware-graded question (`kind = "measured"`) is graded against: this
/// server's own recent measurement of `quantity` with `params` (run when missing). The
/// answer is right within a factor of `within` of it.
#[derive(Debug, Clone)]
pub struct MeasuredKey {
    /// The registered experiment's name.
    pub experiment: String,
    /// The quantity it measures (`timing.underestimate_factor`).
    pub quantity: String,
    /// Its parameters (overlaid on the defaults when run).
    pub params: serde_json::Value,
    /// Right within this factor (above 1).
    pub within: f64,
}

impl MeasuredKey {
    /// Whether `given` is within the factor of `measured`.
    pub fn accepts(&self, given: f64, measured: f64) -> bool {
        given > 0.0
            && measured > 0.0
            && given.max(measured) / given.min(measured) <= self.within * (1.0 + 1e-9)
    }
}

/// What kind of answer a question takes, with its key.
#[derive(Debug, Clone)]
pub enum QuestionKind {
    /// Pick one option; `correct` is its index.
    Single {
        /// Option texts.
        options: Vec<String>,
        /// Index of the correct option.
        correct: usize,
    },
    /// Pick every correct option (all-or-nothing).
    Multiple {
        /// Option texts.
        options: Vec<String>,
        /// Indexes of the correct options.
        correct: BTreeSet<usize>,
    },
    /// Type a number; right within `tolerance` of `answer`.
    Numeric {
        /// The exact value.
        answer: f64,
        /// Absolute tolerance accepted either side.
        tolerance: f64,
        /// Unit shown beside the input.
        unit: String,
    },
}

/// A student's answer to one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Answer {
    /// One option index (single choice).
    Choice(usize),
    /// Option indexes (multiple choice).
    Choices(Vec<usize>),
    /// A number (numeric).
    Number(f64),
}

/// Share of correct answers needed to pass, exclusive: the score must be above it.
pub const PASS_MARK_PERCENT: u32 = 75;

/// Whether `correct` out of `total` passes: strictly more than 75%.
pub fn passed(correct: usize, total: usize) -> bool {
    total > 0 && correct * 100 > total * PASS_MARK_PERCENT as usize
}

/// The one rounding rule for a score in percent (here for the quiz pages).
pub use crate::format::percent;

impl Question {
    /// Options for choice questions; empty for numeric.
    pub fn options(&self) -> &[String] {
        match &self.kind {
            QuestionKind::Single { options, .. } | QuestionKind::Multiple { options, .. } => {
                options
            }
            QuestionKind::Numeric { .. } => &[],
        }
    }

    /// The unit of a numeric question; empty for choice questions.
    pub fn unit(&self) -> &str {
        match &self.kind {
            QuestionKind::Numeric { unit, .. } => unit,
            _ => "",
        }
    }

    /// `single`, `multiple` or `numeric`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            QuestionKind::Single { .. } => "single",
            QuestionKind::Multiple { .. } => "multiple",
            QuestionKind::Numeric { .. } => "numeric",
        }
    }

    /// Checks that `answer` has the right shape for this question; the error is a
    /// clause to follow "Question N: ".
    pub fn validate(&self, answer: &Answer) -> Result<(), String> {
        let n = self.options().len();
        let last = n.saturating_sub(1);
        match (&self.kind, answer) {
            (QuestionKind::Single { .. }, Answer::Choice(i)) if *i < n => Ok(()),
            (QuestionKind::Multiple { .. }, Answer::Choices(is)) if is.iter().all(|i| *i < n) => {
                if is.iter().collect::<HashSet<_>>().len() == is.len() {
                    Ok(())
                } else {
                    Err("an option is picked twice".to_string())
                }
            }
            (QuestionKind::Multiple { .. }, Answer::Choice(i)) if *i < n => Ok(()),
            (QuestionKind::Numeric { .. }, Answer::Number(x)) if x.is_finite() => Ok(()),
            (QuestionKind::Numeric { .. }, Answer::Choice(_)) => Ok(()),
            (QuestionKind::Single { .. }, _) => Err(format!(
                "pick one option (it takes one option index from 0 to {last})"
            )),
            (QuestionKind::Multiple { .. }, _) => Err(format!(
                "tick options (it takes a list of option indexes from 0 to {last})"
            )),
            (QuestionKind::Numeric { .. }, _) => Err("type a number".to_string()),
        }
    }

    /// Whether `answer` is right. Call [`Question::validate`] first.
    pub fn is_correct(&self, answer: &Answer) -> bool {
        match (&self.kind, answer) {
            (QuestionKind::Single { correct, .. }, Answer::Choice(i)) => i == correct,
            (QuestionKind::Multiple { correct, .. }, Answer::Choices(is)) => {
                is.iter().copied().collect::<BTreeSet<_>>() == *correct
            }
            (QuestionKind::Multiple { correct, .. }, Answer::Choice(i)) => {
                correct.len() == 1 && correct.contains(i)
            }
            (
                QuestionKind::Numeric {
                    answer, tolerance, ..
                },
                given,
            ) => {
                let given = match given {
                    Answer::Number(x) => *x,
                    Answer::Choice(i) => *i as f64,
                    Answer::Choices(_) => return false,
                };
                // Decimal inputs like 14.95 are not exact in binary: allow a hair of slack
                // so a value exactly on the tolerance edge counts as inside it.
                let slack = 1e-9 * answer.abs().max(1.0);
                (given - answer).abs() <= tolerance + slack
            }
            _ => false,
        }
    }
}

impl Quiz {
    /// The question with `id`.
    pub fn question(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.id == id)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuiz {
    #[serde(rename = "question", default)]
    questions: Vec<RawQuestion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuestion {
    id: toml::Spanned<String>,
    kind: String,
    prompt: String,
    explanation: Option<String>,
    #[serde(rename = "option", default)]
    options: Vec<RawOption>,
    answer: Option<f64>,
    tolerance: Option<f64>,
    unit: Option<String>,
    /// `measured` questions: the quantity, the experiment's parameters and the factor.
    quantity: Option<String>,
    params: Option<toml::Table>,
    within: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOption {
    text: String,
    #[serde(default)]
    correct: bool,
}

/// Checks a `measured` question's key: a quantity some registered experiment measures
/// on either backend, parameters that experiment accepts and that ask that quantity,
/// and a factor above 1.
fn measured_key(
    quantity: Option<&str>,
    params: Option<&toml::Table>,
    within: Option<f64>,
) -> Result<MeasuredKey, String> {
    let quantity = quantity.ok_or("measured questions need a `quantity`")?;
    let within = within
        .filter(|w| *w > 1.0 && w.is_finite())
        .ok_or("measured questions need `within`, a factor above 1")?;
    let params =
        serde_json::to_value(params.cloned().unwrap_or_default()).map_err(|e| e.to_string())?;
    let experiment = crate::experiments::REGISTRY
        .iter()
        .find(|e| e.quantities().iter().any(|q| q.key == quantity))
        .ok_or_else(|| format!("`{quantity}` is not a quantity any experiment measures"))?;
    // The experiment's defaults, overlaid with what the question sets.
    let mut merged = experiment.defaults();
    if let (Some(all), Some(set)) = (merged.as_object_mut(), params.as_object()) {
        all.extend(set.clone());
    }
    let params = merged;
    let job = experiment
        .prepare(Some(&params), &crate::config::Limits::default())
        .map_err(|e| format!("`params` for `{}`: {e}", experiment.name()))?;
    let declared = experiment.quantities().iter().find(|q| q.key == quantity);
    if !declared.is_some_and(|q| {
        q.on == crate::experiments::prediction::On::Any && q.applies(&job.params, false)
    }) {
        return Err(format!(
            "`{quantity}` is not measured on both backends with these `params`"
        ));
    }
    Ok(MeasuredKey {
        experiment: experiment.name().to_string(),
        quantity: quantity.to_string(),
        params,
        within,
    })
}

/// A permutation of `0..n` fixed by `seed` (FNV-1a of the seed, then Fisher–Yates
/// driven by xorshift64*).
pub fn shuffled_order(n: usize, seed: &str) -> Vec<usize> {
    let mut state = seed.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }) | 1;
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        order.swap(i, (r % (i as u64 + 1)) as usize);
    }
    order
}

/// Parses and checks a quiz file; every problem is reported with its line.
pub fn parse(quiz_id: &str, title: &str, file: &str, text: &str) -> Result<Quiz, Vec<Problem>> {
    let lines = LineIndex::new(text, 1);
    let raw: RawQuiz = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| lines.line(s.start));
        vec![Problem::new(
            file,
            line,
            format!("quiz: {}", e.message().trim_end()),
        )]
    })?;
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    let mut questions = Vec::new();
    if raw.questions.is_empty() {
        problems.push(Problem::new(file, 1, "quiz has no [[question]]"));
    }
    for q in raw.questions {
        let line = lines.line(q.id.span().start);
        let id = q.id.into_inner();
        let mut bad = |message: String| {
            problems.push(Problem::new(
                file,
                line,
                format!("question `{id}`: {message}"),
            ))
        };
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            bad("ids are lower-case letters, digits and hyphens".into());
        }
        if !seen.insert(id.clone()) {
            bad("id is used twice in this quiz".into());
        }
        if q.prompt.trim().is_empty() {
            bad("`prompt` is empty".into());
        }
        let explanation = q.explanation.unwrap_or_default();
        if explanation.trim().is_empty() {
            bad("`explanation` is missing: every question explains its answer".into());
        }
        // Authors tend to write the right option first; show options in a fixed
        // per-question shuffled order so position gives nothing away. The order depends
        // only on the ids, so stored answers keep their meaning across restarts.
        let order = shuffled_order(q.options.len(), &format!("{quiz_id}/{id}"));
        let options: Vec<String> = order.iter().map(|&i| q.options[i].text.clone()).collect();
        let correct: BTreeSet<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, i)| q.options[**i].correct)
            .map(|(shown, _)| shown)
            .collect();
        if options.iter().any(|o| o.trim().is_empty()) {
            bad("an option's `text` is empty".into());
        }
        // Code is marked `like this`; a lone backtick would show on the page as is.
        let texts = [&q.prompt, &explanation].into_iter().chain(&options);
        if texts.into_iter().any(|t| t.matches('`').count() % 2 == 1) {
            bad("a backtick is not closed: mark code as `code`".into());
        }
        let mut measured = None;
        let kind = match q.kind.as_str() {
            "single" => {
                if options.len() < 2 {
                    bad("single choice needs at least two options".into());
                }
                if correct.len() != 1 {
                    bad(format!(
                        "single choice needs exactly one correct option, found {}",
                        correct.len()
                    ));
                }
                QuestionKind::Single {
                    options,
                    correct: correct.first().copied().unwrap_or(0),
                }
            }
            "multiple" => {
                if correct.is_empty() || correct.len() == options.len() {
                    bad("multiple choice needs at least one correct and one wrong option".into());
                }
                QuestionKind::Multiple { options, correct }
            }
            "numeric" => {
                if !options.is_empty() {
                    bad("numeric questions take no options".into());
                }
                let tolerance = q.tolerance.unwrap_or(-1.0);
                if tolerance <= 0.0 || !tolerance.is_finite() {
                    bad("numeric questions need a positive `tolerance`".into());
                }
                let answer = q.answer.unwrap_or(f64::NAN);
                if !answer.is_finite() {
                    bad("numeric questions need an `answer`".into());
                }
                let unit = q.unit.unwrap_or_default();
                if unit.trim().is_empty() {
                    bad("numeric questions need a `unit`".into());
                }
                QuestionKind::Numeric {
                    answer,
                    tolerance,
                    unit,
                }
            }
            "measured" => {
                let unit = q.unit.clone().unwrap_or_default();
                match measured_key(q.quantity.as_deref(), q.params.as_ref(), q.within) {
                    Ok(key) => measured = Some(key),
                    Err(message) => bad(message),
                }
                if !options.is_empty() || q.answer.is_some() || q.tolerance.is_some() {
                    bad("measured questions take no options, `answer` or `tolerance`: this server's measurement is the answer".into());
                }
                if unit.trim().is_empty() {
                    bad("measured questions need a `unit`".into());
                }
                QuestionKind::Numeric {
                    answer: f64::NAN,
                    tolerance: f64::NAN,
                    unit,
                }
            }
            other => {
                bad(format!(
                    "unknown kind `{other}` (use single, multiple, numeric or measured)"
                ));
                continue;
            }
        };
        questions.push(Question {
            id,
            prompt: q.prompt,
            explanation,
            kind,
            teaches: None,
            measured,
        });
    }
    if problems.is_empty() {
        Ok(Quiz {
            id: quiz_id.to_string(),
            title: title.to_string(),
            questions,
        })
    } else {
        Err(problems)
    }
}

/// The quiz the unit tests of this module and of [`super::grading`] share: one single
/// choice, one multiple choice and one numeric question.
#[cfg(test)]
pub(crate) mod fixture {
    use super::{Question, Quiz, parse};

    pub(crate) const QUIZ: &str = r#"
[[question]]
id = "one"
kind = "single"
prompt = "Pick B"
explanation = "B is right."
[[question.option]]
text = "A"
[[question.option]]
text = "B"
correct = true

[[question]]
id = "many"
kind = "multiple"
prompt = "Pick A and C"
explanation = "A and C."
[[question.option]]
text = "A"
correct = true
[[question.option]]
text = "B"
[[question.option]]
text = "C"
correct = true

[[question]]
id = "num"
kind = "numeric"
prompt = "GiB?"
answer = 14.90
tolerance = 0.05
unit = "GiB"
explanation = "16e9 / 2^30."
"#;

    pub(crate) fn quiz() -> Quiz {
        parse("q", "Q", "quiz.toml", QUIZ).unwrap()
    }

    pub(crate) fn index_of(q: &Question, text: &str) -> usize {
        q.options().iter().position(|o| o == text).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use fixture::{QUIZ, index_of, quiz};

    #[test]
    fn option_order_is_a_stable_shuffle_that_carries_the_key() {
        assert_eq!(shuffled_order(5, "a/b"), shuffled_order(5, "a/b"));
        let mut sorted = shuffled_order(7, "x/y");
        sorted.sort_unstable();
        assert_eq!(sorted, (0..7).collect::<Vec<_>>());
        let firsts: BTreeSet<usize> = (0..40)
            .map(|i| shuffled_order(4, &format!("q/{i}"))[0])
            .collect();
        assert!(
            firsts.len() >= 3,
            "the first shown option varies between questions: {firsts:?}"
        );
        let q = &quiz().questions[0];
        assert!(q.is_correct(&Answer::Choice(index_of(q, "B"))));
    }

    #[test]
    fn single_choice_is_right_only_on_the_key() {
        let q = &quiz().questions[0];
        let (a, b) = (index_of(q, "A"), index_of(q, "B"));
        assert!(q.is_correct(&Answer::Choice(b)));
        assert!(!q.is_correct(&Answer::Choice(a)));
        assert!(q.validate(&Answer::Choice(2)).is_err());
        assert!(q.validate(&Answer::Number(1.5)).is_err());
    }

    #[test]
    fn multiple_choice_is_all_or_nothing() {
        let q = &quiz().questions[1];
        let (a, b, c) = (index_of(q, "A"), index_of(q, "B"), index_of(q, "C"));
        assert!(q.is_correct(&Answer::Choices(vec![c, a])));
        assert!(
            !q.is_correct(&Answer::Choices(vec![a])),
            "a missing correct option fails"
        );
        assert!(
            !q.is_correct(&Answer::Choices(vec![a, b, c])),
            "an extra wrong option fails"
        );
        assert!(!q.is_correct(&Answer::Choices(vec![])));
        assert!(q.validate(&Answer::Choices(vec![0, 0])).is_err());
        assert!(q.validate(&Answer::Choices(vec![3])).is_err());
    }

    #[test]
    fn numeric_tolerance_edges_are_inclusive() {
        let q = &quiz().questions[2];
        for inside in [14.90, 14.85, 14.95, 14.9012] {
            assert!(q.is_correct(&Answer::Number(inside)), "{inside}");
        }
        for outside in [14.849, 14.951, 16.0, -14.9] {
            assert!(!q.is_correct(&Answer::Number(outside)), "{outside}");
        }
        assert!(q.validate(&Answer::Number(f64::NAN)).is_err());
        assert!(q.validate(&Answer::Number(f64::INFINITY)).is_err());
    }

    #[test]
    fn exactly_75_percent_does_not_pass() {
        assert!(!passed(3, 4));
        assert!(!passed(6, 8));
        assert!(!passed(15, 20));
        assert!(passed(16, 20));
        assert!(passed(7, 8));
        assert!(passed(1, 1));
        assert!(!passed(0, 0));
    }

    #[test]
    fn broken_quizzes_report_lines() {
        let two_correct = QUIZ.replacen(
            "text = \"A\"\n[[question.option]]\ntext = \"B\"\ncorrect = true",
            "text = \"A\"\ncorrect = true\n[[question.option]]\ntext = \"B\"\ncorrect = true",
            1,
        );
        let problems = parse("q", "Q", "quiz.toml", &two_correct).unwrap_err();
        assert_eq!(problems[0].line, 3, "{problems:?}");
        assert!(problems[0].message.contains("exactly one correct option"));

        let no_tolerance = QUIZ.replace("tolerance = 0.05\n", "");
        assert!(
            parse("q", "Q", "quiz.toml", &no_tolerance).unwrap_err()[0]
                .message
                .contains("tolerance")
        );

        let no_explanation = QUIZ.replace("explanation = \"A and C.\"\n", "");
        assert!(
            parse("q", "Q", "quiz.toml", &no_explanation).unwrap_err()[0]
                .message
                .contains("explanation")
        );

        let lone_tick = QUIZ.replace("prompt = \"Pick B\"", "prompt = \"Pick `B\"");
        assert!(
            parse("q", "Q", "quiz.toml", &lone_tick).unwrap_err()[0]
                .message
                .contains("backtick")
        );

        let duplicate = QUIZ.replace("id = \"many\"", "id = \"one\"");
        assert!(
            parse("q", "Q", "quiz.toml", &duplicate).unwrap_err()[0]
                .message
                .contains("used twice")
        );
    }
}
