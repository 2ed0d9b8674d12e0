//! The web layer: HTTP in, HTML and JSON out. A request meets, in order: the
//! [`router`] (URLs to handlers, the layers every response passes through, and
//! [`serve`]; the hand-written ones in [`layers`]), the [`student_layer`] on student
//! routes ([`identity`]: the student cookie; [`guard`]: writes), an extractor or body
//! decoder from [`extract`], a handler in [`routes`] holding the shared [`state`], and
//! on the way out [`error`]'s single `IntoResponse` or a typed [`page`] ([`quiz_pages`]
//! for the quiz form and results, [`learner_pages`] for about, search and completion,
//! [`lab_pages`] for the tuning labs and their latest graded results).
//! What the pages show is worked out in the class's domain (`classroom`: the learner's
//! path, the gradebook's read model and table, class rounds, calibration, measured
//! grading); the instructor's gradebook is shaped for its page, and the live view of
//! the shared GPU read, in [`instructor_pages`]. Static files come from
//! [`assets`], and they and the pages that are the same for everyone are served
//! pre-compressed by [`encoded`]; the API's [`openapi`] document is generated from the
//! handlers and the experiment registry. Nothing outside this folder imports it except
//! `main`.

pub mod assets;
pub mod encoded;
pub mod error;
pub mod extract;
pub mod guard;
pub mod identity;
pub mod instructor_access;
pub mod instructor_pages;
pub mod lab_pages;
pub mod layers;
pub mod learner_pages;
pub mod lint_page;
pub mod login_guard;
pub mod openapi;
pub mod page;
pub mod quiz_pages;
pub mod router;
pub mod routes;
pub mod serve;
pub mod state;
pub mod student_layer;

pub use router::router;
pub use serve::serve;
pub use state::AppState;
