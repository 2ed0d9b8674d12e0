//! The class's shared domain, with no HTTP in it: what a class does together and what
//! the instructor reads of it. [`round`] is a class round's state machine (open → the
//! students predict → running → revealed by the worker that measured it, or failed);
//! [`measurements`] grades hardware-graded quiz questions against this class's own
//! measurements (running the experiment when there is none); [`calibration`] sums up
//! predict-then-measure per learner and per question; [`predictions`] scores and stores
//! a playground prediction; [`quizzes`] grades a quiz attempt and keeps it;
//! [`gradebook`] is the gradebook's read model and the table the instructor sorts,
//! filters and pages; [`learner_flow`] is the learner's way through the
//! course (the steps after a quiz, where "continue" leads, the device status line).
//!
//! It may use `db`, `engine`, `course`, `experiments` and `config`, and knows nothing of
//! axum, askama or the web's `AppState`: `web/` parses a request, calls in here through
//! the one [`Classroom`] handle (built once at start-up and held by the web state), and
//! renders what comes back; [`ClassroomError`] says what went wrong in the class's terms
//! and the web turns it into a status.

pub mod calibration;
pub mod gradebook;
pub mod learner_flow;
pub mod measurements;
pub mod predictions;
pub mod quizzes;
pub mod round;

use std::sync::Arc;

use crate::course::Course;
use crate::db::{Db, DbError};
use crate::engine::Engine;

/// The class's domain: the database the class shares, the engine its experiments run
/// on, the course (its questions) and this node's measurements. Cheap to clone.
#[derive(Clone)]
pub struct Classroom {
    /// The class's shared state.
    pub db: Db,
    /// The experiment queue and the device it runs on.
    pub engine: Engine,
    /// The course, for its prediction questions and quizzes.
    pub course: Arc<Course>,
    /// This class's measurements (hardware-graded quiz questions).
    pub measurements: Arc<measurements::Measurements>,
}

impl Classroom {
    /// The class's domain over `db`, `engine` and `course`.
    pub fn new(db: Db, engine: Engine, course: Arc<Course>) -> Self {
        let measurements = Arc::new(measurements::Measurements::new(db.clone(), engine.clone()));
        Self {
            db,
            engine,
            course,
            measurements,
        }
    }
}

/// What went wrong, in the class's terms (the web layer picks the status).
#[derive(Debug, thiserror::Error)]
pub enum ClassroomError {
    /// A query the class's domain cannot read (a gradebook sort by an unknown column).
    #[error("{0}")]
    Malformed(String),
    /// The request names something that does not exist or does not fit (no such
    /// experiment, a lab not given, a question not asked on this server).
    #[error("{0}")]
    Invalid(String),
    /// The request does not fit the class's state now (a round already run or closed).
    #[error("{0}")]
    Conflict(String),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] DbError),
}
