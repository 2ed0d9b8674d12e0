//! GPU Lab: a browser course on how GPUs behave under model training, served by one binary.
//!
//! A tour of the modules, in the order a request meets them:
//!
//! - [`config`]: everything the server can be told on the command line or through
//!   `GPULAB_*` environment variables, with safe defaults.
//! - [`app`]: the one [`app::AppState`] every handler shares, the [`app::router`] that maps
//!   URLs to handlers, and [`app::serve`], which runs the router on a listener until a
//!   shutdown signal. Tests call `router` and `serve` directly on port 0.
//! - [`routes`]: the HTTP handlers, one file per area (pages, static assets).
//! - [`pages`]: typed askama page structs; every HTML page is one of these.
//! - [`error`]: the web layer's error enum and its single `IntoResponse`, which renders the
//!   error page with the right status and logs internal errors without showing them.
//! - [`course`]: the course itself. Lessons are read from `content/` (embedded in the
//!   binary, or a folder given on the command line), passed through a chain of
//!   preprocessors (front matter, directives, highlighting, math, heading anchors, link
//!   checks) and rendered to HTML once, at start-up. `gpulab check` runs the same chain
//!   and prints each problem as `file:line: message`.
//! - [`identity`]: the student cookie: a random id issued on first visit, read by
//!   handlers as a request extension. No accounts, no passwords.
//! - [`db`]: the SQLite database (WAL, migrated on start-up) of students, quiz attempts
//!   and answers, and the instructor's gradebook queries.
//! - [`gpu`]: the experiment engine: the GPU (cudarc, NVRTC, NVML, loaded at run time)
//!   or the CPU when there is none, behind a bounded queue and one worker thread. All
//!   `unsafe` lives there.
//! - [`assets`]: the static files under `web/static/`, embedded in the binary with their
//!   content types and ETags, so the binary serves the course from any directory.

pub mod app;
pub mod assets;
pub mod config;
pub mod course;
pub mod db;
pub mod error;
pub mod gpu;
pub mod identity;
pub mod metrics;
pub mod pages;
pub mod ratelimit;
pub mod routes;
pub mod tables;
