//! The learner's way through the course, as plain functions the pages share: the steps
//! offered after a quiz (next lesson, review, final exam, completion page), where the
//! home page's "Continue where you left off" leads, and the one-line device status
//! every lesson header and the home page show. Per-learner answers come from the
//! student's stored attempts; nothing here is baked into the pre-rendered lessons
//! except the device status, which is the same for everyone for the server's lifetime.

use serde::Serialize;

use crate::course::quiz::Quiz;
use crate::course::{Course, FINAL_EXAM_ID, Lesson};
use crate::db::progress::{AttemptRecord, QuizProgress};
use crate::gpu::DeviceCard;

/// Where the completion page lives.
pub const COMPLETION_PATH: &str = "/final-exam/complete";

/// A link offered to the learner; `primary` is drawn as the main button.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Where it leads.
    pub href: String,
    /// What it says.
    pub label: String,
    /// The one step to take next.
    pub primary: bool,
}

impl Step {
    fn new(href: impl Into<String>, label: impl Into<String>, primary: bool) -> Self {
        Self {
            href: href.into(),
            label: label.into(),
            primary,
        }
    }
}

/// The quiz page of `id`: `/lessons/<id>/quiz`, or `/final-exam`.
pub fn quiz_href(id: &str) -> String {
    if id == FINAL_EXAM_ID {
        "/final-exam".into()
    } else {
        format!("/lessons/{id}/quiz")
    }
}

/// What to offer after an attempt at `quiz`: the way on when it passed, the way back
/// to the lesson and a retake when it did not.
pub fn after_quiz(course: &Course, quiz: &Quiz, passed: bool) -> Vec<Step> {
    let Some((lesson, _, next)) = course.lesson(&quiz.id) else {
        return if passed {
            vec![
                Step::new(COMPLETION_PATH, "See your completion page →", true),
                Step::new("/", "Back to the course home", false),
            ]
        } else {
            vec![
                Step::new("/final-exam", "Retake the final exam", true),
                Step::new("/", "Review the lessons", false),
            ]
        };
    };
    let review = Step::new(
        format!("/lessons/{}", lesson.slug),
        "Review the lesson",
        !passed,
    );
    if !passed {
        return vec![
            review,
            Step::new(quiz_href(&quiz.id), "Retake the quiz", false),
        ];
    }
    let onward = match next {
        Some(next) => Step::new(
            format!("/lessons/{}", next.slug),
            format!("Next lesson: {} →", next.title),
            true,
        ),
        None => Step::new("/final-exam", "Take the final exam →", true),
    };
    vec![onward, review]
}

/// The home page's "Continue where you left off".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Continue {
    /// Where to go.
    pub href: String,
    /// The link's words.
    pub label: String,
    /// Why this is the place, in a sentence.
    pub reason: String,
    /// The lesson it leads into (1-based), so the page script can prefer a lesson the
    /// learner read further on; 0 for the exam and the completion page.
    pub lesson_number: usize,
}

fn lesson_step(lesson: &Lesson, reason: String) -> Continue {
    Continue {
        href: format!("/lessons/{}", lesson.slug),
        label: format!("Lesson {}: {}", lesson.number, lesson.title),
        reason,
        lesson_number: lesson.number,
    }
}

/// Where a learner with these results should pick up: after their latest attempt, the
/// next lesson whose quiz they have not passed, a retake of a quiz they did not pass,
/// the final exam once every lesson is behind them, or their completion page.
pub fn continue_from(
    course: &Course,
    progress: &[QuizProgress],
    attempts: &[AttemptRecord],
) -> Continue {
    let passed = |id: &str| progress.iter().any(|p| p.quiz_id == id && p.passed);
    let first = &course.lessons[0];
    let Some(last) = attempts.last() else {
        return lesson_step(first, "Start at the beginning: no quiz taken yet.".into());
    };
    if last.quiz_id == FINAL_EXAM_ID || course.lessons.iter().all(|l| passed(&l.slug)) {
        return if passed(FINAL_EXAM_ID) {
            Continue {
                href: COMPLETION_PATH.into(),
                label: "Your completion page".into(),
                reason: "You passed the final exam.".into(),
                lesson_number: 0,
            }
        } else {
            Continue {
                href: "/final-exam".into(),
                label: "The final exam".into(),
                reason: "It covers all nine lessons; pass it with more than 75%.".into(),
                lesson_number: 0,
            }
        };
    }
    let Some(at) = course.lessons.iter().position(|l| l.slug == last.quiz_id) else {
        return lesson_step(first, "Start at the beginning.".into());
    };
    let lesson = &course.lessons[at];
    if !passed(&lesson.slug) {
        return Continue {
            href: quiz_href(&lesson.slug),
            label: format!("Retake the quiz for lesson {}: {}", lesson.number, lesson.title),
            reason: "Your last attempt did not pass yet; the results page links to the sections to reread.".into(),
            lesson_number: lesson.number,
        };
    }
    let next = course.lessons[at + 1..]
        .iter()
        .chain(&course.lessons[..at])
        .find(|l| !passed(&l.slug))
        .unwrap_or(first);
    lesson_step(
        next,
        format!("You passed the quiz for lesson {}.", lesson.number),
    )
}

/// The device line on the home page and in each lesson's header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceStatus {
    /// True when experiments run on a GPU.
    pub gpu: bool,
    /// One sentence: what live experiments run on.
    pub headline: String,
    /// Why there is no GPU (empty on a GPU).
    pub reason: String,
}

impl DeviceStatus {
    /// The status for the device the engine chose at start-up.
    pub fn from_card(card: &DeviceCard) -> Self {
        if card.kind.is_cuda() {
            return Self {
                gpu: true,
                headline: format!("Live experiments run on this server's GPU: {}.", card.name),
                reason: String::new(),
            };
        }
        // The card's note reads "No GPU in use (REASON): experiments run on the CPU…".
        let reason = card
            .note
            .strip_prefix("No GPU in use (")
            .and_then(|rest| rest.split_once("):"))
            .map_or(card.note.as_str(), |(reason, _)| reason);
        Self {
            gpu: false,
            headline: format!(
                "No GPU on this server: live experiments run on its CPU ({}), so their numbers are CPU numbers.",
                card.name
            ),
            reason: format!("Why: {reason}."),
        }
    }
}

/// A stored UTC timestamp (`2026-11-23T20:34:52.123Z`) as a date: `23 November 2026`.
pub fn long_date(timestamp: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let part =
        |range: std::ops::Range<usize>| timestamp.get(range).and_then(|s| s.parse::<usize>().ok());
    match (part(0..4), part(5..7), part(8..10)) {
        (Some(year), Some(month @ 1..=12), Some(day)) => {
            format!("{day} {} {year}", MONTHS[month - 1])
        }
        _ => timestamp.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::course::ContentSource;

    fn course() -> Course {
        Course::load(&ContentSource::Embedded).unwrap()
    }

    fn attempt(quiz_id: &str, passed: bool) -> AttemptRecord {
        AttemptRecord {
            id: 1,
            quiz_id: quiz_id.into(),
            correct: 1,
            total: 1,
            passed,
            submitted_at: "2026-11-23T10:00:00.000Z".into(),
        }
    }

    fn best(quiz_id: &str, passed: bool) -> QuizProgress {
        QuizProgress {
            quiz_id: quiz_id.into(),
            best_correct: 1,
            best_total: 1,
            best_percent: 100.0,
            attempts: 1,
            passed,
        }
    }

    #[test]
    fn a_passed_quiz_leads_on_and_a_failed_one_back() {
        let course = course();
        let first = course.quiz(&course.lessons[0].slug).unwrap();
        let steps = after_quiz(&course, first, true);
        assert!(steps[0].primary && steps[0].label.starts_with("Next lesson"));
        assert_eq!(
            steps[0].href,
            format!("/lessons/{}", course.lessons[1].slug)
        );
        assert_eq!(steps[1].label, "Review the lesson");
        let failed = after_quiz(&course, first, false);
        assert_eq!(failed[0].label, "Review the lesson");
        assert!(failed[0].primary);
        let last = course.quiz(&course.lessons.last().unwrap().slug).unwrap();
        assert_eq!(after_quiz(&course, last, true)[0].href, "/final-exam");
        let exam = course.quiz(FINAL_EXAM_ID).unwrap();
        assert_eq!(after_quiz(&course, exam, true)[0].href, COMPLETION_PATH);
    }

    #[test]
    fn continuing_picks_the_next_unpassed_lesson_or_a_retake() {
        let course = course();
        let slug = |i: usize| course.lessons[i].slug.clone();
        let fresh = continue_from(&course, &[], &[]);
        assert_eq!(fresh.href, format!("/lessons/{}", slug(0)));
        let after_two = continue_from(
            &course,
            &[best(&slug(0), true), best(&slug(1), true)],
            &[attempt(&slug(0), true), attempt(&slug(1), true)],
        );
        assert_eq!(after_two.href, format!("/lessons/{}", slug(2)));
        assert_eq!(after_two.lesson_number, 3);
        let failed = continue_from(
            &course,
            &[best(&slug(3), false)],
            &[attempt(&slug(3), false)],
        );
        assert_eq!(failed.href, format!("/lessons/{}/quiz", slug(3)));
        let all: Vec<QuizProgress> = course.lessons.iter().map(|l| best(&l.slug, true)).collect();
        let exam_next = continue_from(&course, &all, &[attempt(&slug(8), true)]);
        assert_eq!(exam_next.href, "/final-exam");
        let mut done = all.clone();
        done.push(best(FINAL_EXAM_ID, true));
        let finished = continue_from(&course, &done, &[attempt(FINAL_EXAM_ID, true)]);
        assert_eq!(finished.href, COMPLETION_PATH);
    }

    #[test]
    fn the_cpu_status_says_why_and_dates_read_as_words() {
        let status = DeviceStatus::from_card(&crate::gpu::card::cpu_card("no NVIDIA driver"));
        assert!(!status.gpu);
        assert!(status.headline.starts_with("No GPU on this server"));
        assert_eq!(status.reason, "Why: no NVIDIA driver.");
        assert_eq!(long_date("2026-11-23T20:34:52.123Z"), "23 November 2026");
        assert_eq!(long_date("garbage"), "garbage");
    }
}
